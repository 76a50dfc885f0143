"""Automatic compaction through the official Python SDK: the trigger, the
event sequence, the summary call, the request that follows, a failing
summary call, the recovery after CONTEXT_WINDOW_EXCEEDED, resume after a
compaction, and a differential run against the official runtime.

The pressure comes from the usage the fake model reports (a reply's
``usage``), so each scenario compacts at a known turn whatever the size of
this runtime's tool descriptions. ``DSH_CONTEXT_WINDOW=48000`` gives a
threshold of 24,000 tokens and keeps 7,680 tokens of recent turns.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from deepseek_harness import DeepSeekHarness

from interop_support import FRAME_TIMEOUT, FakeModel, all_of, first, types
from test_differential import KEY, REMOVED, drive, official_bin, scrub  # noqa: F401 - fixture

WINDOW = {"DSH_CONTEXT_WINDOW": "48000"}
# 9,000 tokens: turn 2 alone outweighs the 7,680 retained.
BIG = "B" + "lorem ipsum dolor sit amet " * 1333
CHECKPOINT = "compact-checkpoint"


def replies(summary):
    return [
        {"text": "R1", "usage": {"input_tokens": 100, "output_tokens": 1}},
        {"text": "R2", "usage": {"input_tokens": 30000, "output_tokens": 1}},
        summary,
        {"text": "R3"},
        {"text": "R4"},
    ]


def texts(message):
    return [b.get("text", "") for b in message["content"]]


def request_texts(request):
    return [t for m in request["body"]["messages"] for t in texts(m)]


def compaction_events(events):
    return [e for e in events if e["type"].startswith("compaction/") or (
        e["type"] == "user/message" and e["data"]["source"]["kind"] == CHECKPOINT)]


def run(dsh_bin, base, summary, prompts=("first", BIG, "third", "fourth"), env=WINDOW):
    server = FakeModel(base / "fake", replies(summary))
    try:
        results = drive(dsh_bin, base / "run", server, list(prompts), env=dict(env))
        return results, server.requests()
    finally:
        server.close()


def test_compaction_condenses_the_oldest_turn_and_the_next_request_carries_the_checkpoint(dsh_bin, base_dir):
    results, requests = run(dsh_bin, base_dir, {"text": "SUMMARY-ONE"})
    assert [r.final_response for r in results] == ["R1", "R2", "R3", "R4"]
    turn3 = results[2].events
    kinds = types(turn3)
    # Before the step: start → summary → checkpoint → end, then step/start.
    assert kinds[kinds.index("compaction/start"):kinds.index("step/start") + 1] == [
        "compaction/start", "compaction/summary", "user/message", "compaction/end", "step/start"]
    start, summary, checkpoint, end = compaction_events(turn3)
    cid = start["data"]["compactionId"]
    assert start["data"] == {"compactionId": cid, "turn": 3}
    assert end["data"] == {"compactionId": cid, "turn": 3}
    # The span is turn 1: its prompt, its runtime context and its reply.
    turn1_messages = [e["seq"] for e in results[0].events if e["type"] in ("user/message", "assistant/message")]
    s = summary["data"]
    assert s["shadowedSeqs"] == turn1_messages
    assert s["shadowedRange"] == {"start": turn1_messages[0], "end": turn1_messages[-1]}
    assert s["summary"] == [{"type": "text", "text": "SUMMARY-ONE"}] == s["rawOutput"]
    assert (s["llmStreamCall"], s["provider"], s["model"], s["maxTokens"]) == (
        True, "deepseek-official", "deepseek-v4-flash", 12000)  # a quarter of the small window
    assert s["shadowedTokenCount"] > 0 and s["usage"]["outputTokens"] > 0
    assert list(s) == ["compactionId", "summary", "rawOutput", "llmStreamCall", "shadowedRange", "shadowedSeqs",
                       "shadowedTokenCount", "provider", "model", "maxTokens", "usage"]
    assert checkpoint["data"]["source"] == {"kind": CHECKPOINT, "compactionId": cid}
    assert checkpoint["surfaceOp"] == {"op": "replace", "startSeq": turn1_messages[0], "endSeq": turn1_messages[-1]}
    assert checkpoint["sourceEventSeqs"] == [start["seq"], summary["seq"], *turn1_messages]
    assert texts(checkpoint["data"])[1:] == ["SUMMARY-ONE", "</compacted-summary>"]
    assert texts(checkpoint["data"])[0].endswith("<compacted-summary>")
    # Requests: R1, R2, the summary call, R3, R4.
    assert len(requests) == 5
    call = requests[2]
    assert call["headers"].get("x-deepseek-harness-compact") == "1"
    assert all("x-deepseek-harness-compact" not in r["headers"] for r in requests[:2] + requests[3:])
    assert call["body"]["max_tokens"] == 12000
    assert call["body"]["messages"][0]["content"][0]["text"] == "first"
    assert BIG not in request_texts(call), "the summary call carries only the span"
    assert call["body"]["messages"][-1]["role"] == "user"
    # The next request: the checkpoint in place of turn 1, then turn 2 whole.
    after = request_texts(requests[3])
    assert after[:3] == texts(checkpoint["data"])
    assert "first" not in after and "R1" not in after
    assert BIG in after and "third" in after
    # No compaction in turn 4 (the pressure is the estimate again).
    assert compaction_events(results[3].events) == []


def test_a_failed_summary_call_leaves_the_history_whole(dsh_bin, base_dir):
    failing = {"error": {"code": "X", "message": "summary refused", "status": 400}}
    results, requests = run(dsh_bin, base_dir, failing)
    assert [r.final_response for r in results] == ["R1", "R2", "R3", "R4"]
    start, end = compaction_events(results[2].events)
    assert end["type"] == "compaction/end" and end["data"]["compactionId"] == start["data"]["compactionId"]
    assert "summary refused" in end["data"]["error"]
    assert all(e["type"] != "compaction/summary" for e in results[2].events)
    # One summary call, not retried; the turn goes on with the full history.
    assert [bool(r["headers"].get("x-deepseek-harness-compact")) for r in requests] == [False, False, True, False, False]
    assert request_texts(requests[3])[0] == "first"


def test_without_a_small_window_nothing_is_compacted(dsh_bin, base_dir):
    results, requests = run(dsh_bin, base_dir, {"text": "R-unused"}, prompts=("first", BIG, "third"), env={})
    assert all(compaction_events(r.events) == [] for r in results)
    assert [r.final_response for r in results] == ["R1", "R2", "R-unused"]


def test_a_context_window_exceeded_reply_is_compacted_once_and_tried_again(dsh_bin, base_dir):
    too_long = {"error": {"code": "X", "message": "This model's maximum context length was exceeded", "status": 400}}
    server = FakeModel(base_dir / "fake", [
        {"text": "R1"}, {"text": "R2"}, too_long, {"text": "SUMMARY"}, {"text": "R3"}])
    try:
        results = drive(dsh_bin, base_dir / "run", server, ["first", BIG, "third"], env=dict(WINDOW))
        requests = server.requests()
    finally:
        server.close()
    assert [r.final_response for r in results] == ["R1", "R2", "R3"]
    kinds = types(results[2].events)
    assert kinds.index("assistant/attempt") < kinds.index("compaction/start") < kinds.index("compaction/end") \
        < kinds.index("assistant/message")
    assert "llm/retry" not in kinds
    assert [bool(r["headers"].get("x-deepseek-harness-compact")) for r in requests] == [False, False, False, True, False]
    assert request_texts(requests[4])[0].endswith("<compacted-summary>")


def test_resume_after_a_compaction_rebuilds_the_compacted_history(dsh_bin, base_dir):
    server = FakeModel(base_dir / "fake", replies({"text": "SUMMARY-ONE"}))
    (base_dir / "ws").mkdir()

    def harness():
        return DeepSeekHarness(
            dsh_bin=str(dsh_bin), dsh_home=str(base_dir / "dsh_home"), cwd=str(base_dir / "ws"),
            provider="deepseek-official", model="deepseek-v4-flash", base_url=server.base_url, api_key=KEY,
            request_timeout_seconds=FRAME_TIMEOUT, env={"HOME": str(base_dir / "home"), **WINDOW})

    try:
        h = harness()
        try:
            session = h.start_session("session-compacted")
            for prompt in ("first", BIG, "third"):
                session.run(prompt)
        finally:
            h.close()
        before = copy.deepcopy(server.requests()[-1]["body"]["messages"])
        h = harness()
        try:
            result = h.resume_session("session-compacted").run("fourth")
        finally:
            h.close()
        after = server.requests()[-1]["body"]["messages"]
    finally:
        server.close()
    assert result.final_response == "R4"
    assert first(result.events, "request/header")["data"]["reason"] == "resume"
    assert all_of(result.events, "compaction/start") == []
    # The request after resume continues the compacted one exactly.
    assert after[:len(before)] == before
    assert texts(after[0])[0].endswith("<compacted-summary>") and "first" not in [t for m in after for t in texts(m)]
    assert texts(after[len(before)]) == ["R3"]


# --- differential: the official runtime on the same script ----------------

# Three 1.5 MiB prompts in a 1,000,000-token window (the official runtime
# reads no window knob): turn 1 is condensed before turn 3, and the
# estimate is still over the threshold, so the checkpoint is condensed
# again. (A fourth turn differs: the official runtime keeps counting the
# usage reported before a checkpoint and condenses a second time; dsh
# estimates afresh after a compaction.)
HUGE = 1572864


def huge(tag, size=HUGE):
    return tag + " " + "lorem ipsum dolor sit amet " * (size // 27)


def normalise(results):
    events = [e for r in results for e in r.events if e["type"] not in REMOVED]
    renumber = {e["seq"]: i for i, e in enumerate(events)}
    out = []
    for e in events:
        if not (e["type"].startswith(("compaction/", "turn/", "step/")) or e["type"] in ("user/message", "request/header")):
            continue
        e = copy.deepcopy(e)
        e["seq"] = renumber[e["seq"]]
        e.pop("time", None)
        data = e["data"]
        if "sourceEventSeqs" in e:
            e["sourceEventSeqs"] = [renumber[s] for s in e["sourceEventSeqs"]]
        if isinstance(e.get("surfaceOp"), dict):
            op = e["surfaceOp"]
            op["startSeq"], op["endSeq"] = renumber[op["startSeq"]], renumber[op["endSeq"]]
        if e["type"] == "request/header":
            data["header"]["tools"] = "<tools>"
        if e["type"] == "user/message":
            data["content"] = [b["text"][:40] if b["text"] in ("SUMMARY-1", "SUMMARY-2", "</compacted-summary>")
                               or b["text"].startswith(("P1 ", "P2 ", "P3 ", "P4")) else "<prose>"
                               for b in data["content"]]
            data["source"].pop("sections", None)
        if e["type"] == "compaction/summary":
            data["shadowedRange"] = {k: renumber[v] for k, v in data["shadowedRange"].items()}
            data["shadowedSeqs"] = [renumber[s] for s in data["shadowedSeqs"]]
            # Estimates of our own prose and tools, and the fake model's
            # usage of each runtime's requests, differ.
            data["shadowedTokenCount"] = "<estimate>"
            data["usage"] = "<usage>"
        if e["type"] == "compaction/end" and "error" in data:
            data["error"] = re.sub(r"\d+", "<n>", data["error"])
        if "compactionId" in data:
            data["compactionId"] = "<id>"
        if "source" in data and "compactionId" in data["source"]:
            data["source"]["compactionId"] = "<id>"
        out.append(scrub(e))
    return out


def run_both(script, prompts, official_bin, dsh_bin, base_dir):
    """The prompts on one session of each runtime, each against its own fake
    model playing `script`: ((results, requests) official, (…) dsh)."""
    runs = {}
    for name, binary in (("official", official_bin), ("dsh", dsh_bin)):
        server = FakeModel(base_dir / f"fake-{name}", script)
        try:
            results = drive(binary, base_dir / name, server, prompts)
            runs[name] = (results, server.requests())
        finally:
            server.close()
    return runs["official"], runs["dsh"]


def compact_flags(requests) -> list[bool]:
    """Which provider requests were summary calls."""
    return [bool(r["headers"].get("x-deepseek-harness-compact")) for r in requests]


def test_differential_compaction_matches_the_official_runtime(official_bin, dsh_bin, base_dir):
    script = [{"text": "R1"}, {"text": "R2"}, {"text": "SUMMARY-1"}, {"text": "SUMMARY-2"}, {"text": "R3"}]
    prompts = [huge("P1"), huge("P2"), huge("P3")]
    (official, official_requests), (ours, our_requests) = run_both(script, prompts, official_bin, dsh_bin, base_dir)
    assert [r.final_response for r in ours] == [r.final_response for r in official] == ["R1", "R2", "R3"]
    assert normalise(ours) == normalise(official)
    assert compact_flags(our_requests) == compact_flags(official_requests) == [False, False, True, True, False]
    for ours_r, theirs_r in zip(our_requests, official_requests):
        assert ours_r["body"]["max_tokens"] == theirs_r["body"]["max_tokens"]
        shape = lambda r: [(m["role"], len(m["content"])) for m in r["body"]["messages"]]  # noqa: E731
        assert shape(ours_r) == shape(theirs_r)


def test_a_twenty_turn_session_over_the_window_keeps_running_and_stays_coherent(dsh_bin, base_dir):
    window = 48000
    server = FakeModel(base_dir / "fake", [{"text": f"R{i}"} for i in range(80)])
    prompts = [f"P{n:02d} " + "lorem ipsum dolor sit amet " * 444 for n in range(1, 21)]  # ~3,000 tokens each
    env = {"DSH_CONTEXT_WINDOW": str(window)}
    try:
        results = drive(dsh_bin, base_dir / "run", server, prompts, env=env)
        requests = server.requests()
        # Resumed, the session goes on from the same compacted history.
        h = DeepSeekHarness(
            dsh_bin=str(dsh_bin), dsh_home=str(base_dir / "run" / "dsh_home"), cwd=str(base_dir / "run" / "ws"),
            provider="deepseek-official", model="deepseek-v4-flash", base_url=server.base_url, api_key=KEY,
            request_timeout_seconds=FRAME_TIMEOUT, env={"HOME": str(base_dir / "run" / "home"), **env})
        try:
            h.resume_session("session-diff").run("one more")
        finally:
            h.close()
        resumed = server.requests()[-1]["body"]["messages"]
    finally:
        server.close()
    last = requests[-1]["body"]["messages"]
    assert resumed[:len(last)] == last
    assert len(results) == 20 and all(r.final_response.startswith("R") for r in results)
    ends = [e for r in results for e in r.events if e["type"] == "compaction/end"]
    assert len([e for e in ends if "error" not in e["data"]]) >= 4, ends
    calls = [r for r in requests if r["headers"].get("x-deepseek-harness-compact")]
    turns = [r for r in requests if not r["headers"].get("x-deepseek-harness-compact")]
    assert len(turns) == 20
    history_tokens = [len(json.dumps(r["body"]["messages"])) // 4 for r in turns]
    # Without compaction the history would reach 60,000 tokens.
    assert max(history_tokens) < window - 9000, history_tokens
    for n, request in enumerate(turns):
        user_texts = [t for m in request["body"]["messages"] if m["role"] == "user" for t in texts(m)]
        # The turn's own prompt is always there, whole, and older prompts
        # are either verbatim or condensed, never cut.
        assert prompts[n] in user_texts
        assert all(t in prompts or not t.startswith("P") for t in user_texts)
    compacted = [r for r in turns if texts(r["body"]["messages"][0])[0].endswith("<compacted-summary>")]
    assert compacted and turns.index(compacted[0]) + len(compacted) == 20, "once compacted, every request starts from a checkpoint"
    # Each later summary call condenses the previous checkpoint with what followed it.
    for call in calls[1:]:
        assert texts(call["body"]["messages"][0])[0].endswith("<compacted-summary>")


# Issue 26, row 2: the provider reports 100 input tokens per reply, so the
# reported usage never nears the threshold; the official runtime compacts
# anyway once the history's own estimate does (two prompts of 1.37 MB
# before the third request; two of 1.34 MB do not), whatever the size of
# the pending prompt.
@pytest.mark.parametrize("size,compacts", [(1_340_000, False), (1_370_000, True)])
def test_differential_compaction_when_the_reported_usage_is_small(size, compacts, official_bin, dsh_bin, base_dir):
    small = {"input_tokens": 100, "output_tokens": 1}
    script = [{"text": "R1", "usage": small}, {"text": "R2", "usage": small},
              {"text": "SUMMARY-1", "usage": small}, {"text": "R3", "usage": small}]
    prompts = [huge("P1", size), huge("P2", size), "P3 short"]
    (official, official_requests), (ours, our_requests) = run_both(script, prompts, official_bin, dsh_bin, base_dir)
    assert normalise(ours) == normalise(official)
    expected = [False, False] + ([True, False] if compacts else [False])
    assert compact_flags(our_requests) == compact_flags(official_requests) == expected
    assert [r.final_response for r in ours] == [r.final_response for r in official]
