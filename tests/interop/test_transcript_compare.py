"""Replay official client frames against dsh-rs and compare the runtime's frames.

For each scenario the client lines of the official capture are sent to our
binary, adapted: provider ``scripted`` / model ``echo`` in ``initialize``, and
our own temp paths instead of ``/home/user/workdir/<scenario>``. A line is sent
once (a) every earlier request has been answered and (b) as many runtime
frames have arrived as the official client had seen (``timeline.jsonl``, minus
delivery-accepted events, and never counting the answer to this or a later
request). So pipelined requests of the official raw_protocol client are sent
one at a time here.

Each runtime frame is reduced to a normal form: notifications to (sessionId,
event type, seq, structural data) or (sessionId, status); responses to the
method and the result keys or the error message. Ids, times, paths and prose
are normalised away; delivery-accepted events are removed from the official
side and later seqs of that session shifted down. Error messages that are Node
accidents in the official runtime compare as "some error".

Ordering: the notification sequences must be equal and the response sequences
must be equal. A response may come later relative to notifications than in
the official capture (e.g. ``step/start`` before the prompt response), but
never earlier: everything the official runtime sent before a response must
precede our response too (PROTOCOL 6.5 guarantees).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interop_support import DELIVERY_ACCEPTED, FRAME_TIMEOUT

SCENARIOS = ["plain_text", "two_turns", "working_directory", "raw_protocol"]

NODE_ACCIDENTS = (
    'The "paths[0]" argument',
    "blocks.filter is not a function",
    'agent id "undefined"',
    "Cannot read properties of undefined",
)

# Sessions whose creation side effects are an upstream accident (PROTOCOL 5.2 / 15:
# a prompt with bad contentBlocks still creates the session). Our runtime may or
# may not create them; if it does, the events must match the official ones.
OPTIONAL_SESSIONS = {"raw_protocol": {"s-bad"}}


class SomeError:
    """Matches any error message (official Node accidents)."""

    def __eq__(self, other):
        return isinstance(other, (str, SomeError))

    def __hash__(self):
        return 0

    def __repr__(self):
        return "<some error>"


def official_base(scenario: str) -> str:
    return f"/home/user/workdir/{scenario}"


def is_request(obj) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("id"), (str, int))
        and not isinstance(obj.get("id"), bool)
        and isinstance(obj.get("method"), str)
    )


def parse(line: bytes):
    try:
        return json.loads(line)
    except ValueError:
        return None


def adapt_client_line(line: bytes, scenario: str, base: Path) -> bytes:
    text = line.decode("utf-8").replace(official_base(scenario), str(base))
    obj = parse(text.encode())
    if is_request(obj) and obj["method"] == "initialize" and "provider" in obj.get("params", {}):
        obj["params"]["provider"] = "scripted"
        obj["params"]["model"] = "echo"
        return (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    return text.encode()


def normalise_path(value, base: str):
    return value.replace(base, "<base>") if isinstance(value, str) else value


def normal_form(frame: dict, methods: dict, base: str):
    method = frame.get("method")
    if method == "session.event":
        sid = frame["params"]["sessionId"]
        event = frame["params"]["event"]
        data = event.get("data") if isinstance(event.get("data"), dict) else {}
        detail = []
        if "turn" in data:
            detail.append(("turn", data["turn"]))
        if "step" in data:
            detail.append(("step", data["step"]))
        if event["type"] == "agent/inbox/spliced":
            detail.append(("splice", data.get("target"), data.get("start"), data.get("removedCount"),
                           len(data.get("inserted", []))))
        if event["type"] == "turn/end":
            reason = data.get("reason", {})
            detail.append(("reason", reason.get("kind"), (reason.get("error") or {}).get("code")))
        if event["type"] == "working-directory/change":
            detail.append(("cwd", normalise_path(data.get("cwd"), base)))
        return ("event", sid, event["type"], event["seq"], tuple(detail))
    if method == "session.status":
        return ("status", frame["params"]["sessionId"], frame["params"]["status"])
    if method is not None:
        return ("notification", method)
    request_method = methods.get(json.dumps(frame.get("id")), "?")
    if "error" in frame:
        message = frame["error"].get("message", "")
        if any(message.startswith(accident) for accident in NODE_ACCIDENTS):
            message = SomeError()
        else:
            message = normalise_path(message, base)
        return ("response", request_method, "error", frame["error"].get("code"), message)
    result = frame.get("result")
    keys = tuple(sorted(result)) if isinstance(result, dict) else type(result).__name__
    cwd = normalise_path(result.get("cwd"), base) if isinstance(result, dict) else None
    return ("response", request_method, "result", keys, cwd)


def official_frames_without_delivery(frames: list[dict]) -> list[dict]:
    removed: dict[str, int] = {}
    out = []
    for frame in frames:
        if frame.get("method") == "session.event":
            sid = frame["params"]["sessionId"]
            event = frame["params"]["event"]
            if event["type"] == DELIVERY_ACCEPTED:
                removed[sid] = removed.get(sid, 0) + 1
                continue
            if removed.get(sid):
                event = dict(event, seq=event["seq"] - removed[sid])
                frame = {**frame, "params": {**frame["params"], "event": event}}
        out.append(frame)
    return out


def in_sessions(frame: dict, sessions: set) -> bool:
    return frame.get("method") == "session.event" and frame["params"]["sessionId"] in sessions


def send_gates(scenario_dir: Path, client_lines: list[bytes], official: list[dict], optional: set) -> list[int]:
    """For each client line: how many of *our* frames must have arrived before sending it.

    Neither delivery-accepted events nor events of optional sessions are counted.
    """
    timeline = [json.loads(line) for line in (scenario_dir / "timeline.jsonl").read_text().splitlines()]
    request_index = {}
    for i, line in enumerate(client_lines):
        obj = parse(line)
        if is_request(obj):
            request_index.setdefault(json.dumps(obj["id"]), i)
    answered_by = {}  # official r2c index -> client line index it answers
    for r, frame in enumerate(official):
        if "method" not in frame and json.dumps(frame.get("id")) in request_index:
            answered_by[r] = request_index[json.dumps(frame.get("id"))]
    not_counted = [
        (f.get("method") == "session.event" and f["params"]["event"]["type"] == DELIVERY_ACCEPTED)
        or in_sessions(f, optional)
        for f in official
    ]
    gates = []
    seen = 0
    counts = {}
    for row in timeline:
        if row["dir"] == "r2c":
            seen += 1
        else:
            counts[row["i"]] = seen
    for i in range(len(client_lines)):
        count = counts[i]
        # never wait for the answer to this line or a later one (timestamps may be inexact)
        for r, j in answered_by.items():
            if j >= i:
                count = min(count, r)
        gates.append(count - sum(not_counted[:count]))
    return gates


def replay(raw, scenario_dir: Path, client_lines: list[bytes], official: list[dict], optional: set):
    gates = send_gates(scenario_dir, client_lines, official, optional)
    answered_ids = {json.dumps(f["id"]) for f in official if "method" not in f and "id" in f}
    pending = []
    shutdown_sent = False
    for line, gate in zip(client_lines, gates):
        if not shutdown_sent:
            for request_id in pending:
                raw.response_to(request_id, timeout=FRAME_TIMEOUT)
            pending = []
            raw.wait_count(gate, counted=lambda f: not in_sessions(f, optional))
        try:
            raw.send_raw(line if line.endswith(b"\n") else line + b"\n")
        except BrokenPipeError:
            assert shutdown_sent, "runtime closed stdin before shutdown"
        obj = parse(line)
        if is_request(obj) and json.dumps(obj["id"]) in answered_ids and not shutdown_sent:
            pending.append(obj["id"])
            if obj["method"] == "shutdown":
                raw.response_to(obj["id"])
                shutdown_sent = True
    frames = raw.wait_eof(timeout=10.0)
    assert raw.wait_exit() == 0
    return frames


def compare(ours: list, theirs: list):
    notes_ours = [x for x in ours if x[0] != "response"]
    notes_theirs = [x for x in theirs if x[0] != "response"]
    assert notes_ours == notes_theirs, "notification sequence differs"
    responses_ours = [x for x in ours if x[0] == "response"]
    responses_theirs = [x for x in theirs if x[0] == "response"]
    assert responses_ours == responses_theirs, "response sequence differs"

    def preceding(seq):
        out, count = [], 0
        for x in seq:
            if x[0] == "response":
                out.append(count)
            else:
                count += 1
        return out

    for response, ours_before, theirs_before in zip(responses_ours, preceding(ours), preceding(theirs)):
        assert ours_before >= theirs_before, (
            f"{response} came before notification #{theirs_before} "
            f"({notes_theirs[ours_before] if ours_before < len(notes_theirs) else None}) that must precede it"
        )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_transcript_matches_official(scenario, transcripts, make_raw, base_dir, workspace):
    scenario_dir = transcripts / scenario
    if scenario == "working_directory":
        (workspace / "sub" / "deeper").mkdir(parents=True)
        (base_dir / "outside").mkdir()

    raw_client_lines = (scenario_dir / "client-to-runtime.ndjson").read_bytes().splitlines(keepends=True)
    client_lines = [adapt_client_line(line, scenario, base_dir) for line in raw_client_lines]
    official = [json.loads(line) for line in (scenario_dir / "runtime-to-client.ndjson").read_bytes().splitlines()]
    methods = {}
    for line in client_lines:
        obj = parse(line)
        if is_request(obj):
            methods.setdefault(json.dumps(obj["id"]), obj["method"])

    optional = OPTIONAL_SESSIONS.get(scenario, set())
    raw = make_raw()
    try:
        replay(raw, scenario_dir, client_lines, official, optional)
        replay_error = None
    except AssertionError as error:  # compare what arrived, for a readable diff
        replay_error = error
    ours_frames = list(raw.frames)
    assert not [f for f in ours_frames if "__unparsable__" in f]

    official_kept = official_frames_without_delivery(official)
    ours = [normal_form(f, methods, str(base_dir)) for f in ours_frames]
    theirs = [normal_form(f, methods, official_base(scenario)) for f in official_kept]

    for sid in optional:
        if not any(x[0] == "event" and x[1] == sid for x in ours):
            theirs = [x for x in theirs if not (x[0] == "event" and x[1] == sid)]

    compare(ours, theirs)
    if replay_error is not None:
        raise replay_error
