"""What the agents decide by, as one number: an incremental run trusts the last run's
judgements only when they were made with the same thresholds.

The run state (cortexgraph.run_state) records each memory's fingerprint and the moment time
alone next moves its decay score through a bar; both are only as good as the configuration
they were taken under. A changed half-life moves every crossing time, a changed link or
promotion bar changes who clusters or qualifies: the last run's word on an unchanged memory no
longer stands, so the next run looks at every memory (agents.incremental.begin) and says why.

The key covers the five agents' configurations as a ``Pipeline`` resolves them (its defaults
filled in), except how a run acts on its findings rather than what it finds: the merge mode
(apply, preview, link) and the decay step's gc mode, which the CLI and the deployments choose
per run (a run whose gc acts after runs whose gc did not still judges what they left below
the forget threshold, and a run that merges clusters again what a preview or links left:
agents.run_scope.RunScope.gc_settled, .unmerged). It is a CRC32 of a canonical JSON form
(sets sorted, enums by value), the same in every process whatever its hash seed.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from enum import Enum
from typing import Any

from cortexgraph.agents.decay_findings import DecayAnalyzerConfig, GcMode
from cortexgraph.agents.ltm_promoter import PromoterConfig
from cortexgraph.agents.pipeline import Pipeline, PipelineConfig
from cortexgraph.agents.semantic_merge import MergeMode
from cortexgraph.storage.decay import DecayConfig


def pipeline_key(pipeline: Pipeline) -> int:
    """The key of the configuration ``pipeline``'s agents run with."""
    return _key(
        pipeline.decay.config,
        pipeline.cluster.config,
        pipeline.merge.config,
        pipeline.promote.config,
        pipeline.relations.config,
    )


def config_key(config: PipelineConfig, decay: DecayConfig) -> int:
    """The key a ``Pipeline`` built with ``config`` over a store decaying by ``decay`` would
    have (pipeline_key), without opening the store: for a run that may not need to."""
    return _key(
        config.decay or DecayAnalyzerConfig(decay=decay),
        config.cluster,
        config.merge,
        config.promote or PromoterConfig(decay=decay),
        config.relations,
    )


def _key(decay: Any, cluster: Any, merge: Any, promote: Any, relations: Any) -> int:
    judged = (
        dataclasses.replace(decay, gc=GcMode.OFF),
        cluster,
        dataclasses.replace(merge, mode=MergeMode.APPLY),
        promote,
        relations,
    )
    text = json.dumps(_canonical(judged), sort_keys=True, separators=(",", ":"))
    return zlib.crc32(text.encode("utf-8"))


def _canonical(value: Any) -> Any:
    """``value`` as plain JSON, the same in every process."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        named = {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"type": type(value).__name__, **named}
    if isinstance(value, Enum):
        return _canonical(value.value)
    if isinstance(value, set | frozenset):
        return sorted((_canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return repr(value)  # inf and nan as well
    raise TypeError(f"no canonical form for {type(value).__name__} in an agent's configuration")


__all__ = ["config_key", "pipeline_key"]
