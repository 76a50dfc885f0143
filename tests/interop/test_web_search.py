"""`web_search` end to end: the official SDK drives dsh on the
`deepseek-official` provider, and the fake model server (crates/dsh-fake-model)
answers both the chat requests and the search requests (its `search`
entries). Then the same calls through the official runtime, compared.

What the official runtime 0.2.1rc2 was seen to do (probes against the fake
server): one `POST {search base}/messages` per distinct query, all at once,
plain JSON (`accept: application/json`, no `stream`), `x-api-key` and
`authorization: Bearer`; one `web/deepseek-search-llm-request {endpoint,
apiVersion, body}` per query, all before the answers; the sources of all
queries merged by rank, each URL once, at most 8; an answer without a
`web_search_tool_result` block fails the call with `WEB_PROVIDER_ERROR`
naming the endpoint. Its search base URL is the `web-search-deepseek`
plugin's `baseURL` (a `--patch` entry), else `DEEPSEEK_SEARCH_BASE_URL`
(requests go to `<it>/messages`), not `DEEPSEEK_BASE_URL`; dsh's is
`DSH_WEB_SEARCH_BASE_URL`, else `DEEPSEEK_SEARCH_BASE_URL` (issue 26).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from deepseek_harness import DeepSeekHarness

from interop_support import FRAME_TIMEOUT, RawClient, all_of, clean_env, first
from test_differential import normalise_events, official_bin  # noqa: F401 - official_bin is a fixture

KEY = "sk-web-search-secret-42"
EVENT = "web/deepseek-search-llm-request"


def search_call(queries, call_id="call_ws_1"):
    return {"blocks": [{"tool_call": {"id": call_id, "name": "web_search", "arguments": {"queries": queries}}}]}


def run(dsh_bin, base_dir: Path, server, prompts=("Search the web",), search_base=None, env=None, binary=None,
        patches=(), **options):
    """Runs prompts on one session of dsh (or `binary`) against `server`;
    the search goes to `search_base` (default: the server itself)."""
    base_dir.mkdir(parents=True, exist_ok=True)
    for name in ("home", "ws"):
        (base_dir / name).mkdir(exist_ok=True)
    variables = {"HOME": str(base_dir / "home"), "DSH_RETRY_INITIAL_MS": "5", "DSH_RETRY_MAX_MS": "40"}
    if binary is None:
        variables["DSH_WEB_SEARCH_BASE_URL"] = search_base or server.base_url
    variables.update(env or {})
    harness = DeepSeekHarness(
        dsh_bin=str(binary or dsh_bin), dsh_home=str(base_dir / "dsh_home"), cwd=str(base_dir / "ws"),
        provider="deepseek-official", model="deepseek-v4-flash", base_url=server.base_url, api_key=KEY,
        request_timeout_seconds=FRAME_TIMEOUT, env=variables, patches=list(patches), **options)
    try:
        session = harness.start_session("session-search")
        return [session.run(prompt) for prompt in prompts]
    finally:
        harness.close()


def events_of(results):
    return [e for r in results for e in r.events]


def searches(server):
    return [r for r in server.requests() if r["path"].endswith("/messages") and r["path"] != "/v1/messages"]


def result_of(events, call_id="call_ws_1"):
    return next(e["data"] for e in events if e["type"] == "tool/result" and e["data"]["message"]["toolCallId"] == call_id)


def text_of(result):
    return result["message"]["content"][0]["text"]


def source_lines(result):
    return [line for line in text_of(result).splitlines() if line.startswith("- ")]


def test_one_query_lists_its_sources_and_records_the_request_first(dsh_bin, fake_model, base_dir):
    search = [{"results": [{"url": "https://tokio.rs/", "title": "Tokio", "page_age": "2 days ago"},
                           {"url": "https://docs.rs/tokio", "title": "tokio - Rust"}],
               "text": "Tokio is an asynchronous runtime.",
               "blocks": [{"text": "It schedules tasks", "citations": [
                   {"url": "https://tokio.rs/", "title": "Tokio", "cited_text": "An asynchronous runtime for Rust"}]}]}]
    server = fake_model([search_call(["rust async runtime"]), {"text": "done"}], search=search)
    events = events_of(run(dsh_bin, base_dir, server))
    kinds = [e["type"] for e in events]
    at = kinds.index("tool/call")
    assert kinds[at:at + 3] == ["tool/call", EVENT, "tool/result"]
    request = events[at + 1]["data"]
    assert list(request) == ["endpoint", "apiVersion", "body"]
    assert request["endpoint"] == server.base_url + "/messages"
    assert request["apiVersion"] == "2023-06-01"
    body = request["body"]
    assert list(body) == ["model", "max_tokens", "messages", "tools", "thinking"]
    assert body["model"] == "deepseek-v4-flash" and body["max_tokens"] == 4096
    assert body["tools"] == [{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}]
    assert body["thinking"] == {"type": "disabled"}
    [message] = body["messages"]
    assert message["role"] == "user" and message["content"][0]["text"].endswith(": rust async runtime")

    [sent] = searches(server)
    assert sent["path"] == "/messages" and sent["body"] == body
    headers = sent["headers"]
    assert headers["x-api-key"] == f"<redacted len={len(KEY)}>"
    assert headers["authorization"] == f"<redacted len={len('Bearer ' + KEY)}>"
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["accept"] == "application/json" and headers["content-type"] == "application/json"
    assert "stream" not in sent["body"]

    result = result_of(events)
    assert result["message"]["isError"] is False and "error" not in result
    assert source_lines(result) == [
        "- [Tokio](https://tokio.rs/) — An asynchronous runtime for Rust (2 days ago)",
        "- [tokio - Rust](https://docs.rs/tokio)",
    ]
    paragraphs = text_of(result).split("\n\n")
    assert len(paragraphs) == 3 and paragraphs[1].startswith("Sources:\n")
    assert result["meta"] == {"sources": [
        {"url": "https://tokio.rs/", "title": "Tokio", "snippet": "An asynchronous runtime for Rust", "publishedAt": "2 days ago"},
        {"url": "https://docs.rs/tokio", "title": "tokio - Rust"},
    ], "truncated": False}
    # The model's next request carries the result.
    follow_up = [r for r in server.requests() if r["path"] == "/v1/messages"][-1]
    tool_result = follow_up["body"]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["is_error"] is False
    assert tool_result["content"][0]["text"] == text_of(result)


def test_four_queries_are_in_flight_together_and_merge_by_rank(dsh_bin, fake_model, base_dir):
    # The first query's answer waits until the last query's request has
    # arrived: the call succeeds only if the four are sent together.
    search = [
        {"when": "alpha", "after": "delta", "results": [{"url": "https://a.example/1", "title": "A1"}, {"url": "https://a.example/2", "title": "A2"}]},
        {"when": "beta", "results": [{"url": "https://b.example/1", "title": "B1"}],
         "blocks": [{"text": "b", "citations": [{"url": "https://b.example/1", "cited_text": "beta passage"}]}]},
        {"when": "gamma", "results": [{"url": "https://a.example/1", "title": "A1 again"}, {"url": "https://g.example/1", "title": "G1"}]},
        {"when": "delta", "results": [{"url": f"https://d.example/{i}", "title": f"D{i}"} for i in range(1, 7)]},
    ]
    server = fake_model([search_call(["alpha q", "beta q", "gamma q", "delta q"]), {"text": "done"}], search=search)
    events = events_of(run(dsh_bin, base_dir, server))
    requests = all_of(events, EVENT)
    assert [r["data"]["body"]["messages"][0]["content"][0]["text"].rsplit(": ", 1)[1] for r in requests] == \
        ["alpha q", "beta q", "gamma q", "delta q"]
    kinds = [e["type"] for e in events]
    assert kinds.index("tool/result") > max(i for i, k in enumerate(kinds) if k == EVENT)
    assert len(searches(server)) == 4
    result = result_of(events)
    assert source_lines(result) == [
        "- [A1](https://a.example/1)", "- [B1](https://b.example/1) — beta passage", "- [D1](https://d.example/1)",
        "- [A2](https://a.example/2)", "- [G1](https://g.example/1)", "- [D2](https://d.example/2)",
        "- [D3](https://d.example/3)", "- [D4](https://d.example/4)",
    ]
    assert result["meta"]["truncated"] is True and len(result["meta"]["sources"]) == 8
    assert len(text_of(result).split("\n\n")) == 4  # notice, sources, the cut note, how to cite


def test_an_answer_without_result_blocks_fails_naming_the_endpoint(dsh_bin, fake_model, base_dir):
    server = fake_model([search_call(["no search here"]), {"text": "done"}],
                        search=[{"text": "I answer from memory instead."}])
    results = run(dsh_bin, base_dir, server)
    assert results[0].final_response == "done"
    result = result_of(events_of(results))
    assert result["message"]["isError"] is True
    assert result["error"] == {"name": "WebError", "code": "WEB_PROVIDER_ERROR"}
    text = text_of(result)
    assert text.startswith("Error: ") and "web_search_tool_result" in text
    assert f'"{server.base_url}/messages"' in text.split("\n\n")[1]
    assert "DSH_WEB_SEARCH_BASE_URL" in text
    assert len(searches(server)) == 1  # an answer that arrived is not retried


def test_an_http_error_fails_and_a_retryable_one_is_retried_as_chat(dsh_bin, fake_model, base_dir):
    search = [
        {"when": "flaky", "error": {"code": "SERVER", "message": "search backend busy", "status": 500}},
        {"when": "flaky", "error": {"code": "RATE_LIMIT", "message": "slow down", "status": 429, "retry_after_ms": 20}},
        {"when": "flaky", "results": [{"url": "https://ok.example/", "title": "Recovered"}]},
        {"when": "refused", "error": {"code": "AUTH", "message": "bad key", "status": 401}},
    ]
    server = fake_model([search_call(["flaky q"], "call_flaky"), search_call(["refused q"], "call_refused"),
                         {"text": "done"}], search=search)
    events = events_of(run(dsh_bin, base_dir, server))
    flaky = result_of(events, "call_flaky")
    assert flaky["message"]["isError"] is False
    assert source_lines(flaky) == ["- [Recovered](https://ok.example/)"]
    refused = result_of(events, "call_refused")
    assert refused["error"] == {"name": "WebError", "code": "WEB_PROVIDER_ERROR"}
    assert text_of(refused).startswith("Error: the search API answered HTTP 401: bad key\n\n")
    sent = [r["body"]["messages"][0]["content"][0]["text"].rsplit(": ", 1)[1] for r in searches(server)]
    assert sent == ["flaky q", "flaky q", "flaky q", "refused q"]  # 401 is not retried
    # One request event per query, however many attempts; no model retry events.
    assert len(all_of(events, EVENT)) == 2
    assert all_of(events, "llm/retry") == []


def test_a_call_past_its_time_limit_fails_with_tool_timeout(dsh_bin, fake_model, base_dir):
    server = fake_model([search_call(["slow q", "fast q"]), {"text": "done"}],
                        search=[{"when": "slow", "delay_ms": 5000, "results": []}, {"when": "fast", "results": []}])
    events = events_of(run(dsh_bin, base_dir, server, env={"DSH_WEB_SEARCH_TIMEOUT_MS": "300"}))
    result = result_of(events)
    assert result["error"] == {"name": "ToolTimeoutError", "code": "TOOL_TIMEOUT"}
    assert text_of(result) == ("Error: the web search gave no result within 300 ms "
                               "(the web_search time limit; DSH_WEB_SEARCH_TIMEOUT_MS).")
    assert len(all_of(events, EVENT)) == 2


def test_the_search_base_url_is_its_own_setting(dsh_bin, fake_model, base_dir):
    chat = fake_model([search_call(["where"]), {"text": "done"}])
    search = fake_model([], search=[{"results": [{"url": "https://elsewhere.example/", "title": "Elsewhere"}]}])
    events = events_of(run(dsh_bin, base_dir, chat, search_base=search.base_url + "/search/v1/"))
    assert first(events, EVENT)["data"]["endpoint"] == search.base_url + "/search/v1/messages"
    assert [r["path"] for r in search.requests()] == ["/search/v1/messages"]
    assert [r["path"] for r in chat.requests()] == ["/v1/messages", "/v1/messages"]
    assert source_lines(result_of(events)) == ["- [Elsewhere](https://elsewhere.example/)"]


@pytest.mark.parametrize("variable", ["DSH_WEB_SEARCH_BASE_URL", "DEEPSEEK_SEARCH_BASE_URL"])
def test_a_bad_search_base_url_stops_the_launch_naming_its_variable(variable, dsh_bin, base_dir):
    import subprocess

    (base_dir / "h").mkdir()
    env = clean_env(base_dir / "dsh_home", base_dir / "h", **{variable: "ftp://example.com"})
    done = subprocess.run([str(dsh_bin), "--profile", "sdk"], input=b"", env=env, capture_output=True, timeout=30)
    assert done.returncode == 1
    assert variable.encode() in done.stderr and b"ftp://example.com" in done.stderr


def test_the_key_never_appears_in_events_stderr_or_files(dsh_bin, fake_model, make_raw, workspace, dsh_home, home):
    search = [{"error": {"code": "SERVER", "message": "busy", "status": 503}},
              {"results": [{"url": "https://k.example/", "title": "K"}]},
              {"text": "no blocks"}]
    server = fake_model([search_call(["first"]), search_call(["second"], "call_ws_2"), {"text": "done"}], search=search)
    env = clean_env(dsh_home, home, DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY,
                    DSH_WEB_SEARCH_BASE_URL=server.base_url, DSH_RETRY_INITIAL_MS="5", DSH_LOG="debug")
    raw: RawClient = make_raw(env=env)
    raw.initialize(workspace, model="deepseek-v4-flash", provider="deepseek-official")
    start = len(raw.frames)
    raw.prompt("s-key", "search twice")
    raw.status("s-key", "idle", start=start)
    events = [f["params"]["event"] for f in raw.frames[start:] if f.get("method") == "session.event"]
    assert len(all_of(events, EVENT)) == 2
    assert [e["data"].get("error", {}).get("code") for e in all_of(events, "tool/result")] == [None, "WEB_PROVIDER_ERROR"]
    assert raw.shutdown() == 0
    raw._err_reader.join(timeout=5)
    stderr = raw.stderr.decode(errors="replace")
    assert "web search attempt 1 failed" in stderr, stderr  # the retry was logged ...
    assert KEY not in stderr  # ... without the key
    assert all(KEY.encode() not in line for line in raw.raw_lines)
    for path in Path(dsh_home).rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_without_a_key_nothing_is_sent(dsh_bin, fake_model, make_raw, workspace, dsh_home, home):
    # The chat model is scripted (no key needed); the search has none.
    from interop_support import write_scenario

    server = fake_model([])
    scenario = write_scenario(workspace.parent, [search_call(["q"]), {"text": "done"}])
    raw = make_raw(env=clean_env(dsh_home, home, DSH_WEB_SEARCH_BASE_URL=server.base_url))
    raw.initialize(workspace, model=scenario)
    start = len(raw.frames)
    raw.prompt("s-nokey", "search")
    raw.status("s-nokey", "idle", start=start)
    events = [f["params"]["event"] for f in raw.frames[start:] if f.get("method") == "session.event"]
    result = result_of(events)
    assert result["error"] == {"name": "WebError", "code": "WEB_PROVIDER_CREDENTIAL_MISSING"}
    assert "DEEPSEEK_API_KEY" in text_of(result)
    assert all_of(events, EVENT) == [] and server.requests() == []


# ---------------------------------------------------------------------------
# Against the official runtime
# ---------------------------------------------------------------------------

PROMPT_TEXT = re.compile(r"^.*: (?P<query>[^\n]*)$", re.S)


def normalise_search_text(text: str) -> str:
    """A web_search result with each runtime's sentences masked: the
    paragraphs' layout, the source lines and the endpoint are compared."""
    paragraphs = text.split("\n\n")
    if text.startswith("Error: "):
        endpoint = re.search(r'"([^"]+)"', paragraphs[1]) if len(paragraphs) > 1 else None
        return f"Error: <cause>\n\n<endpoint note {endpoint and endpoint.group(1)}>"
    out = ["<notice>"]
    for paragraph in paragraphs[1:-1]:
        if paragraph.startswith("Sources:\n"):
            out.append(paragraph)
        elif paragraph.startswith("("):
            out.append("<cut note>")
        else:
            out.append("<nothing found>")
    return "\n\n".join(out + ["<how to cite>"])


def normalise(value, servers):
    """Both runtimes' fake server URLs become <fake>; search prompts keep
    only their query; web_search result texts are normalised."""
    text = json.dumps(value)
    for server in servers:
        text = text.replace(server.base_url, "<fake>")
    value = json.loads(text)

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "web_search_20250305":
                return node
            for key, child in list(node.items()):
                node[key] = walk(child)
            if node.get("role") == "user" and isinstance(node.get("content"), list):
                for block in node["content"]:
                    match = block.get("type") == "text" and PROMPT_TEXT.match(block["text"])
                    if match and block["text"].startswith(("Perform", "Search the web for this")):
                        block["text"] = "<search prompt>: " + match.group("query")
            if node.get("type") == "text" and isinstance(node.get("text"), str) and (
                    node["text"].startswith(("External web content", "Web search results from outside"))
                    or (node["text"].startswith("Error: ") and "endpoint" in node["text"])):
                node["text"] = normalise_search_text(node["text"])
            return node
        if isinstance(node, list):
            return [walk(child) for child in node]
        return node

    return walk(value)


DIFFERENTIAL = {
    "with_results": (
        [search_call(["rust async runtime"]),
         search_call(["alpha q", "beta q", "gamma q", "delta q"], "call_ws_4"),
         search_call(["nothing q"], "call_ws_5"),
         {"text": "done"}],
        [
            {"when": "rust", "results": [{"url": "https://tokio.rs/", "title": "Tokio", "page_age": "2 days ago"},
                                         {"url": "https://docs.rs/tokio", "title": ""}],
             "blocks": [{"text": "t", "citations": [{"url": "https://tokio.rs/", "title": "Tokio", "cited_text": "A runtime"}]}]},
            {"when": "alpha", "results": [{"url": "https://a.example/1", "title": "A1", "page_age": "3 days ago"},
                                          {"url": "https://a.example/2", "title": "A2"}], "text": "Alpha text."},
            {"when": "beta", "results": [{"url": "https://b.example/1", "title": "B1"}],
             "blocks": [{"text": "b", "citations": [{"url": "https://b.example/1", "cited_text": "beta passage"},
                                                    {"url": "https://elsewhere.example/", "cited_text": "not a result"}]}]},
            {"when": "gamma", "results": [{"url": "https://a.example/1", "title": "A1 again"}, {"url": "https://g.example/1", "title": "G1"}],
             "blocks": [{"text": "g", "citations": [{"url": "https://g.example/1", "cited_text": "first g"}]},
                        {"text": "g2", "citations": [{"url": "https://g.example/1", "cited_text": "second g"}]}]},
            {"when": "delta", "results": [{"url": f"https://d.example/{i}", "title": f"D{i}"} for i in range(1, 7)]},
            {"when": "nothing", "results": []},
        ],
    ),
    "without_result_blocks": (
        [search_call(["plain answer"]), {"text": "done"}],
        [{"text": "I answer without searching."}],
    ),
    "refused_arguments": (
        [search_call([], "c0"), search_call(["a", "b", "c", "d", "e"], "c5"), search_call("one", "cs"),
         search_call([1, 2], "cn"), search_call(["  "], "cb"), {"blocks": [{"tool_call": {"id": "cm", "name": "web_search", "arguments": {}}}]},
         {"text": "done"}],
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIAL))
def test_same_search_requests_and_events_as_the_official_runtime(name, official_bin, dsh_bin, fake_model, base_dir):
    replies, search = DIFFERENTIAL[name]
    official_server = fake_model(replies, search=search)
    ours_server = fake_model(replies, search=search)
    patch = base_dir / "search-patch.yml"
    patch.write_text(f"- id: web-search-deepseek\n  config:\n    baseURL: {official_server.base_url}\n")
    official = run(dsh_bin, base_dir / "official", official_server, binary=official_bin, patches=[str(patch)])
    ours = run(dsh_bin, base_dir / "ours", ours_server)
    servers = [official_server, ours_server]

    def unbased(results, base):
        for result in results:
            result.events = json.loads(json.dumps(result.events).replace(str(base), "<base>"))
        return results

    official = unbased(official, base_dir / "official")
    ours = unbased(ours, base_dir / "ours")
    theirs_events = normalise(normalise_events(official, ["Search the web"]), servers)
    ours_events = normalise(normalise_events(ours, ["Search the web"]), servers)
    assert [e["type"] for e in ours_events] == [e["type"] for e in theirs_events]
    for mine, theirs in zip(ours_events, theirs_events):
        assert mine == theirs, f"event {theirs['type']} (seq {theirs['seq']}) differs"

    def search_bodies(server):
        bodies = [normalise(r["body"], servers) for r in searches(server)]
        return sorted(bodies, key=json.dumps)  # concurrent queries arrive in any order

    assert search_bodies(ours_server) == search_bodies(official_server)
    assert [r["path"] for r in searches(ours_server)] == [r["path"] for r in searches(official_server)]
    chats = [len([r for r in s.requests() if r["path"] == "/v1/messages"]) for s in servers]
    assert chats[0] == chats[1]
    for mine, theirs in zip(searches(ours_server), searches(official_server)):
        for header in ("content-type", "accept", "x-api-key", "authorization", "anthropic-version"):
            assert mine["headers"].get(header) == theirs["headers"].get(header), header
    if name == "without_result_blocks":
        result = result_of(ours_events)
        assert result["error"] == {"name": "WebError", "code": "WEB_PROVIDER_ERROR"}
        assert text_of(result) == "Error: <cause>\n\n<endpoint note <fake>/messages>"


# Issue 26: the official runtime posts to `$DEEPSEEK_SEARCH_BASE_URL/messages`
# (its default, when unset: https://api.deepseek.com/anthropic/v1/messages).
# dsh honours the same variable; its own DSH_WEB_SEARCH_BASE_URL wins when
# both are set.
def test_deepseek_search_base_url_is_honoured_like_the_official_runtime(official_bin, dsh_bin, fake_model, base_dir):
    replies = [search_call(["proxy q"]), {"text": "done"}]
    search = [{"results": [{"url": "https://proxy.example/", "title": "Proxied"}]}]
    chats = [fake_model(replies) for _ in range(2)]
    proxies = [fake_model([], search=search) for _ in range(2)]
    runs = []
    for name, binary, chat, proxy in zip(("official", "ours"), (official_bin, dsh_bin), chats, proxies):
        env = {"DEEPSEEK_SEARCH_BASE_URL": proxy.base_url + "/proxy/v1"}
        results = run(dsh_bin, base_dir / name, chat, binary=binary, env=env)
        runs.append(normalise(normalise_events(results, ["Search the web"]), chats + proxies))
        # The search went to the proxy, at <it>/messages; the chat server saw
        # only chat requests.
        assert first(events_of(results), EVENT)["data"]["endpoint"] == proxy.base_url + "/proxy/v1/messages", name
        assert [r["path"] for r in proxy.requests()] == ["/proxy/v1/messages"], name
        assert [r["path"] for r in chat.requests()] == ["/v1/messages", "/v1/messages"], name
    official, ours = runs
    assert [e["type"] for e in ours] == [e["type"] for e in official]
    for mine, theirs in zip(ours, official):
        assert mine == theirs, f"event {theirs['type']} (seq {theirs['seq']}) differs"
    assert source_lines(result_of(ours)) == ["- [Proxied](https://proxy.example/)"]
    bodies = [normalise(r["body"], chats + proxies) for p in proxies for r in p.requests()]
    assert bodies[0] == bodies[1]
    for header in ("content-type", "accept", "x-api-key", "authorization", "anthropic-version"):
        assert proxies[1].requests()[0]["headers"].get(header) == proxies[0].requests()[0]["headers"].get(header), header


def test_dsh_web_search_base_url_wins_over_deepseek_search_base_url(dsh_bin, fake_model, base_dir):
    chat = fake_model([search_call(["which"]), {"text": "done"}])
    ours = fake_model([], search=[{"results": [{"url": "https://ours.example/", "title": "Ours"}]}])
    theirs = fake_model([], search=[{"results": [{"url": "https://theirs.example/", "title": "Theirs"}]}])
    events = events_of(run(dsh_bin, base_dir, chat, search_base=ours.base_url,
                           env={"DEEPSEEK_SEARCH_BASE_URL": theirs.base_url}))
    assert first(events, EVENT)["data"]["endpoint"] == ours.base_url + "/messages"
    assert theirs.requests() == []
    assert source_lines(result_of(events)) == ["- [Ours](https://ours.example/)"]
