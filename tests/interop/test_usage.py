"""Usage, cost and budgets (dsh's extension, issue 28): `session.usage`
notifications for a client that declares `usage`, the `session/usage`
request over any stored log (dsh's or the official runtime's), prices from
the default table or `initialize.prices`, and `maxCostUsd` / `maxTurns` on
`session/prompt` ending a turn cleanly."""

from __future__ import annotations

import pytest
from deepseek_harness import DeepSeekHarness

from interop_support import FRAME_TIMEOUT, clean_env, session_events
from test_sessions import KEY, official  # noqa: F401 - official is a fixture

SID = "usage"
MODEL = "deepseek-v4-flash"
# DeepSeek's published prices, USD per million tokens.
HIT, MISS, OUT = 0.028, 0.28, 0.42
CAPS = {"protocolVersion": "dsh-1", "clientCapabilities": {"usage": True}}


def bash_call(i: int, usage: dict) -> dict:
    return {"blocks": [{"tool_call": {"id": f"t{i}", "name": "bash",
                                      "arguments": {"description": "d", "command": f"echo {i}"}}}],
            "usage": usage}


def cost(hit: int, miss: int, out: int, prices=(HIT, MISS, OUT)) -> float:
    return (hit * prices[0] + miss * prices[1] + out * prices[2]) / 1_000_000


def usage_frames(frames: list[dict], session: str = SID) -> list[dict]:
    return [f["params"] for f in frames if f.get("method") == "session.usage" and f["params"]["sessionId"] == session]


def deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, replies, **initialize):
    server = fake_model(replies)
    env = clean_env(dsh_home, home, DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY)
    raw = make_raw(env=env)
    raw.initialize(workspace, model=MODEL, provider="deepseek-official", **initialize)
    return raw, server


def test_usage_notifications_follow_each_reply_and_the_turn_end(make_raw, fake_model, dsh_home, home, workspace):
    first = {"input_tokens": 1000, "output_tokens": 50, "cache_hit_tokens": 3000}
    second = {"input_tokens": 200, "output_tokens": 7, "cache_hit_tokens": 4100}
    raw, _ = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace,
                          [bash_call(1, first), {"text": "done", "usage": second}], **CAPS)
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    notices = usage_frames(raw.frames)
    assert [(n["turn"], n.get("step"), n["turnEnded"]) for n in notices] == [(1, 1, False), (1, 2, False), (1, None, True)]
    one, two, end = notices
    assert one["model"] == MODEL
    assert one["request"] == {"requests": 1, "inputTokens": 4000, "cacheHitTokens": 3000, "cacheMissTokens": 1000,
                              "outputTokens": 50, "reasoningTokens": 0, "costUsd": pytest.approx(cost(3000, 1000, 50))}
    assert two["request"]["inputTokens"] == 4300 and two["request"]["cacheHitTokens"] == 4100
    total = end["turnTotal"]
    assert (total["requests"], total["inputTokens"], total["cacheHitTokens"], total["cacheMissTokens"], total["outputTokens"]) \
        == (2, 8300, 7100, 1200, 57)
    assert total["costUsd"] == pytest.approx(cost(7100, 1200, 57))
    assert end["sessionTotal"] == total and "request" not in end
    assert end["context"] == {"usedTokens": 4307, "windowTokens": end["context"]["windowTokens"],
                              "percent": round(4307 * 100 / end["context"]["windowTokens"], 1)}
    # Each notice follows the event it accounts for.
    kinds = [f["params"]["event"]["type"] if f.get("method") == "session.event" else f.get("method")
             for f in raw.frames if f.get("method") in ("session.event", "session.usage")]
    usage_at = [i for i, k in enumerate(kinds) if k == "session.usage"]
    assert [kinds[i - 1] for i in usage_at] == ["assistant/message", "assistant/message", "turn/end"]
    # The request gives the same figures, from the log.
    answer = raw.result("session/usage", {"sessionId": SID})
    assert answer["total"] == total
    assert answer["turns"] == [{"turn": 1, **total}]
    assert answer["byModel"] == {MODEL: total}
    assert answer["context"] == end["context"]


def test_a_client_that_does_not_ask_gets_no_usage_notifications(make_raw, fake_model, dsh_home, home, workspace):
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_hit_tokens": 90}
    raw, _ = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, [{"text": "ok", "usage": usage}])
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    assert usage_frames(raw.frames) == []
    # The usage is still recorded as the official runtime records it.
    message = next(e for e in session_events(raw.frames, SID) if e["type"] == "assistant/message")
    assert message["data"]["usage"] == {"inputTokens": 10, "outputTokens": 5, "cacheReadTokens": 90, "totalTokens": 105}
    assert raw.result("session/usage", {"sessionId": SID})["total"]["cacheHitTokens"] == 90


def test_the_chat_api_maps_deepseek_cache_and_reasoning_fields(make_raw, fake_model, dsh_home, home, workspace):
    server = fake_model([{"reasoning": "hmm", "text": "ok",
                          "usage": {"input_tokens": 300, "output_tokens": 40, "cache_hit_tokens": 700, "reasoning_tokens": 25}}])
    env = clean_env(dsh_home, home, DSH_OPENAI_BASE_URL=server.base_url + "/v1", DSH_OPENAI_API_KEY="local")
    raw = make_raw(env=env)
    raw.initialize(workspace, model="my-local-model", provider="openai-compatible", **CAPS)
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    (one, end) = usage_frames(raw.frames)
    assert one["request"] == {"requests": 1, "inputTokens": 1000, "cacheHitTokens": 700, "cacheMissTokens": 300,
                              "outputTokens": 40, "reasoningTokens": 25, "costUsd": None}
    # No price for a local model: the cost is unknown, not zero.
    assert end["sessionTotal"]["costUsd"] is None


def test_prices_from_initialize_replace_the_defaults(make_raw, fake_model, dsh_home, home, workspace):
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000, "cache_hit_tokens": 1_000_000}
    prices = {MODEL: {"inputCacheHit": 1.0, "inputCacheMiss": 2.0, "output": 4.0}}
    raw, _ = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace, [{"text": "ok", "usage": usage}],
                          prices=prices, **CAPS)
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    assert usage_frames(raw.frames)[0]["request"]["costUsd"] == pytest.approx(7.0)
    assert raw.result("session/usage", {"sessionId": SID})["total"]["costUsd"] == pytest.approx(7.0)


def test_max_turns_ends_the_turn_before_the_next_model_request(make_raw, fake_model, dsh_home, home, workspace):
    usage = {"input_tokens": 10, "output_tokens": 1}
    raw, server = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace,
                               [bash_call(i, usage) for i in range(5)] + [{"text": "never"}])
    raw.result("session/prompt", {"sessionId": SID, "contentBlocks": [{"type": "text", "text": "go"}], "maxTurns": 2})
    raw.status(SID, "idle")
    events = session_events(raw.frames, SID)
    assert events[-1]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "budget", "limit": "maxTurns"}}
    assert len(server.requests()) == 2
    # Both calls have their results: the history stays whole.
    assert [e["type"] for e in events].count("tool/result") == 2
    # The next prompt has no budget and runs on.
    server_replies_left = len(server.requests())
    raw.prompt(SID, "again")
    raw.status(SID, "idle", start=len(raw.frames) - 1)
    assert len(server.requests()) > server_replies_left


def test_max_cost_ends_the_turn_once_spent(make_raw, fake_model, dsh_home, home, workspace):
    usage = {"input_tokens": 1_000_000, "output_tokens": 0}  # 0.28 USD a request
    raw, server = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace,
                               [bash_call(i, usage) for i in range(5)] + [{"text": "never"}], **CAPS)
    raw.result("session/prompt", {"sessionId": SID, "contentBlocks": [{"type": "text", "text": "go"}],
                                  "maxCostUsd": 0.5})
    raw.status(SID, "idle")
    events = session_events(raw.frames, SID)
    assert events[-1]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "budget", "limit": "maxCostUsd"}}
    assert len(server.requests()) == 2
    end = usage_frames(raw.frames)[-1]
    assert end["turnEnded"] and end["turnTotal"]["costUsd"] == pytest.approx(0.56)


def test_session_totals_survive_a_restart_and_turns_are_kept_apart(make_raw, fake_model, dsh_home, home, workspace):
    usage = {"input_tokens": 100, "output_tokens": 10}
    raw, server = deepseek_raw(make_raw, fake_model, dsh_home, home, workspace,
                               [{"text": "one", "usage": usage}, {"text": "two", "usage": usage}], **CAPS)
    raw.prompt(SID, "first")
    raw.status(SID, "idle")
    assert raw.shutdown() == 0
    env = clean_env(dsh_home, home, DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY)
    again = make_raw(env=env)
    again.initialize(workspace, model=MODEL, provider="deepseek-official", **CAPS)
    again.result("session/resume", {"sessionId": SID})
    again.prompt(SID, "second")
    again.status(SID, "idle")
    end = usage_frames(again.frames)[-1]
    assert (end["turn"], end["turnTotal"]["requests"], end["sessionTotal"]["requests"]) == (2, 1, 2)
    answer = again.result("session/usage", {"sessionId": SID})
    assert [(t["turn"], t["inputTokens"]) for t in answer["turns"]] == [(1, 100), (2, 100)]


def test_a_log_the_official_runtime_wrote_is_accounted(official, make_raw, fake_model, dsh_home, workspace, home):  # noqa: F811
    home.mkdir(exist_ok=True)
    server = fake_model([{"text": "Official answer.", "usage": {"input_tokens": 500, "output_tokens": 20, "cache_hit_tokens": 1500}}])
    with DeepSeekHarness(dsh_bin=str(official), dsh_home=str(dsh_home), cwd=str(workspace), base_url=server.base_url,
                         api_key=KEY, request_timeout_seconds=FRAME_TIMEOUT, env={"HOME": str(home)}) as h:
        h.start_session("s-official").run("Hello")
    raw = make_raw()
    raw.initialize(workspace)
    total = raw.result("session/usage", {"sessionId": "s-official"})["total"]
    assert (total["inputTokens"], total["cacheHitTokens"], total["cacheMissTokens"], total["outputTokens"]) == (2000, 1500, 500, 20)
    assert total["costUsd"] == pytest.approx(cost(1500, 500, 20))


def test_bad_usage_params_are_refused(make_raw, workspace):
    raw = make_raw()
    assert "prices" in raw.error("initialize", {"cwd": str(workspace), "prices": {"m": {"output": -1}}})["message"]
    raw.initialize(workspace)
    for params, message in [
        ({"sessionId": ""}, "session/usage requires a non-empty sessionId string"),
        ({"sessionId": "nobody"}, 'session "nobody" not found'),
    ]:
        assert raw.error("session/usage", params)["message"] == message
    blocks = [{"type": "text", "text": "x"}]
    for extra, message in [
        ({"maxTurns": 0}, "session/prompt maxTurns must be a positive integer"),
        ({"maxCostUsd": -1}, "session/prompt maxCostUsd must be a positive number"),
    ]:
        assert raw.error("session/prompt", {"sessionId": SID, "contentBlocks": blocks, **extra})["message"] == message
    # Nothing was created by the refused prompts.
    assert raw.error("session/usage", {"sessionId": SID})["message"] == f'session "{SID}" not found'
