from __future__ import annotations

import pytest

from cortexgraph.activation import PhraseDetector
from cortexgraph.activation.intent_data import load_eval_set, load_training_set

SAVE_REQUESTS = [
    "Remember this: the door code is 1234.",
    "please remember that I take my coffee black",
    "Don't forget the demo is on Friday.",
    "DO NOT FORGET to rotate the keys",
    "Keep in mind that Ana is off next week.",
    "Make a note: the printer needs toner.",
    "Never forget: prod runs on eu-central-1.",
    "Write this down, the VPN host is vpn.example.com",
    "Save this for later: the invoice number is 42.",
    "store this: the bucket is called backups",
    "Record this, the cat hates carrots.",
    "Note to self: renew the domain.",
    "For future reference, the API limit is 100/min.",
]
NOT_SAVE = [
    "What did we eat at that place in Rome?",
    "Remember when I was a kid and we had no phones?",
    "I remember when phones had buttons.",
    "No need to remember this, it's a test.",
    "You don't have to remember any of this.",
    "Don't save that, it was a joke.",
    "Don't bother saving this.",
    "How do I reverse a list in Python?",
    "Thanks, that worked!",
]
RECALL = [
    "What did we decide about the database?",
    "Do you remember my sister's name?",
    "Remind me about the vendor contract.",
    "Last time we talked, what was the plan?",
    "As we discussed, what's the retention?",
    "Why did we choose Terraform?",
    "what did I say about cilantro",
    "Did I ever tell you about my brother?",
]


@pytest.fixture(scope="module")
def detector() -> PhraseDetector:
    return PhraseDetector()


@pytest.mark.parametrize("text", SAVE_REQUESTS)
def test_explicit_save_requests_are_detected(detector, text):
    signals = detector.detect(text)
    assert signals.save_request, text
    assert signals.matched_phrases and signals.confidence == 0.9


@pytest.mark.parametrize("text", NOT_SAVE)
def test_exclusions_and_small_talk_do_not_trigger_a_save(detector, text):
    assert not detector.detect(text).save_request, text


@pytest.mark.parametrize("text", RECALL)
def test_recall_requests_are_detected(detector, text):
    signals = detector.detect(text)
    assert signals.recall_request and not signals.save_request, text


def test_small_talk_about_food_is_not_a_recall(detector):
    signals = detector.detect("What did we eat last night? It was great.")
    assert not signals.recall_request
    assert signals.excluded_phrases


def test_importance_markers_strongest_boost_wins(detector):
    assert detector.detect("This is important").importance_boost == 0.4
    both = detector.detect("important and critical: never forget this")
    assert both.importance_boost == 0.8
    preference = detector.detect("I prefer tabs")  # a statement boost, not a marker
    assert preference.importance_boost == 0.2 and not preference.importance_marker
    assert detector.detect("not that important really").importance_boost == 0.0
    assert not detector.detect("just a note").importance_marker


def test_matching_is_case_insensitive_and_reports_phrases(detector):
    signals = detector.detect("KEEP IN MIND the build takes ages")
    assert signals.matched_phrases == ("keep in mind",)


def test_extra_patterns_per_instance():
    custom = PhraseDetector(extra_save=(r"\bstash this\b",))
    assert custom.detect("stash this somewhere").save_request
    assert not PhraseDetector().detect("stash this somewhere").save_request


def test_labelled_sets_no_missed_explicit_save_and_under_one_percent_false_positives(detector):
    data = load_training_set() + load_eval_set()
    explicit_markers = (
        "remember this",
        "don't forget",
        "keep in mind",
        "make a note",
        "never forget",
        "write this down",
        "save this",
        "store this",
        "record this",
    )
    explicit = [
        m for m in data if any(p in m.text.lower() for p in explicit_markers) and m.should_save
    ]
    assert len(explicit) >= 15
    assert [m.text for m in explicit if not detector.detect(m.text).save_request] == []
    negatives = [m for m in data if not m.should_save]
    false_positives = [m.text for m in negatives if detector.detect(m.text).save_request]
    assert len(false_positives) / len(negatives) < 0.01, false_positives


@pytest.mark.parametrize(
    "text",
    [
        "Previously we picked Redis for the cache, right?",
        "Earlier we talked about the retry policy.",
        "Continue with the migration plan.",
        "Let's continue from where we left off yesterday.",
        "Back to the billing question.",
        "Let's get back to our deploy pipeline.",
        "What's our approach for retries?",
        "What is our decision on the logo?",
        "What was the plan for the Sunday migration?",
        "What do we know about the ledger service?",
    ],
)
def test_the_plugin_specs_recall_phrases(detector, text):
    signals = detector.detect(text)
    assert signals.recall_request and not signals.save_request, text


@pytest.mark.parametrize(
    "text",
    [
        "Send it back to the server after the retry.",
        "Please continue from where you stopped.",
        "What is the plan for today?",
        "Document this function, please",
        "Can you document this in the README?",
    ],
)
def test_tasks_that_look_like_recall_or_save_are_neither(detector, text):
    signals = detector.detect(text)
    assert not signals.recall_request and not signals.save_request, text


@pytest.mark.parametrize(
    "text",
    [
        "Please document this: the API key rotates monthly.",
        "Document this for future reference: staging is on db-3.",
        "We moved the cron to 2am. Document that.",
    ],
)
def test_document_this_is_a_save_request(detector, text):
    assert detector.detect(text).save_request, text
