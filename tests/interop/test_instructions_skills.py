"""Project instructions (AGENTS.md / CLAUDE.md) and skills in the `sdk`
profile, driven through the official Python SDK against dsh-fake-model:
scenarios on dsh alone (unreadable and oversized files, malformed skills,
the unknown-skill list, the sdk-minimal profile) and differential runs
against the official runtime comparing the normalised event streams and
provider requests.

Normalisation (on top of ``test_differential``): the text of an
instructions or catalog message and of a `skill` result is each runtime's
own prose around a fixed layout; it is replaced by its structure (the
labelled sections with their paths and the file contents embedded, the
budget note's left-out paths and shortened path and size, the catalog's
lines, the skill's name, directory and body). The byte count a shortened
file keeps depends on the prose's length and is masked, and so is the list
of known skills that dsh appends to the unknown-skill error (a documented
deviation).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from deepseek_harness import DeepSeekHarness

from interop_support import FRAME_TIMEOUT
from test_differential import KEY, normalise_events, normalise_request, official_bin, unbase  # noqa: F401 - fixture

RESUME = "<resume>"

OPEN, CLOSE = "<system-reminder>\n", "\n</system-reminder>"
SECTION_LABELS = {
    # official runtime
    "Instructions from": "file",
    "Updated instructions from": "changed",
    "Additional instructions from": "added",
    "Instructions removed": "removed",
    # dsh
    "Instructions file": "file",
    "Changed instructions file": "changed",
    "New instructions file": "added",
    "Deleted instructions file": "removed",
}
SECTION = re.compile(
    r"(?:^|\n\n)(" + "|".join(re.escape(k) for k in sorted(SECTION_LABELS, key=len, reverse=True)) + r"): ([^\n]+)\n\n"
)
NOTE = re.compile(r"^(?:Workspace instruction budget|Project instructions are limited to) (\d+) bytes: ([^\n]*)\n\n")
OMITTED = re.compile(r"^(?:omitted|left out) (.+)$")
TRUNCATED = re.compile(r"^(?:truncated|shortened) (.+) from (\d+) to \d+ bytes$")
REPLACING = ("This complete workspace instruction baseline", "This full set of project instructions")
SKILL_DIR = re.compile(r"^(?:Base directory for this skill|Skill directory): (.+)$", re.M)
WORKING_DIRECTORY_PREFIX = re.compile(r"^Current working directory: ")
KNOWN_SKILLS = re.compile(r" \((?:available: [^)]*|no skills are available)\)$")


def instructions_structure(text: str) -> dict:
    """The layout of an instructions message: note, whether it replaces a
    baseline, and (label, path, content) per section."""
    assert text.startswith(OPEN) and text.endswith(CLOSE), text[:200]
    body = text[len(OPEN):-len(CLOSE)]
    note = {}
    match = NOTE.match(body)
    if match:
        note["limit"] = int(match.group(1))
        for part in match.group(2).split("; "):
            if m := OMITTED.match(part):
                note["omitted"] = m.group(1).split(", ")
            elif m := TRUNCATED.match(part):
                note["truncated"] = [m.group(1), int(m.group(2))]
            else:
                note["other"] = part
        body = body[match.end():]
    matches = list(SECTION.finditer(body))
    assert matches, body[:300]
    sections = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        kind, path = SECTION_LABELS[m.group(1)], m.group(2)
        rest = body[m.end():end]
        if kind in ("changed", "added"):
            _sentence, _, rest = rest.partition("\n\n")
        if kind == "removed":
            rest = None
        if note.get("truncated", [None])[0] == path:
            rest = "<shortened>" if rest and body[m.end():end] else rest
        sections.append([kind, path, rest])
    return {"note": note, "replaces": body.startswith(REPLACING), "sections": sections}


def catalog_structure(text: str) -> dict:
    assert text.startswith(OPEN) and text.endswith(CLOSE)
    inside = text.split("<available_skills>\n", 1)[1].split("</available_skills>", 1)[0]
    return {"skills": inside.splitlines()}


def skill_structure(text: str) -> str:
    """A `skill` result's structure; other tool texts as they are, but for
    the `working_directory` result's wording (each runtime's own)."""
    if text.startswith("<skill_content "):
        name = re.match(r'<skill_content name="([^"]*)">\n<skill_resources>\n', text)
        body = text.split("<skill_instructions>\n", 1)[1].rsplit("\n</skill_instructions>\n</skill_content>", 1)
        return json.dumps({"skill": name.group(1), "dir": SKILL_DIR.search(text).group(1), "body": body[0],
                           "tail": body[1]})
    return KNOWN_SKILLS.sub("", WORKING_DIRECTORY_PREFIX.sub("", text))


def structure_of(text: str, kind: str | None):
    if kind == "agent-instructions":
        return instructions_structure(text)
    if kind == "skill-catalog":
        return catalog_structure(text)
    return None


def structured_events(results) -> list[dict]:
    """Events with the prose of instructions, catalogs and skill results
    replaced by their structure, then normalised like test_differential."""
    out = []
    for result in results:
        events = copy.deepcopy(result.events)
        for e in events:
            data = e["data"]
            if e["type"] == "user/message":
                structure = structure_of(data["content"][0]["text"], data["source"]["kind"])
                if structure is not None:
                    data["structure"] = structure
            if e["type"] == "agent/inbox/spliced":
                for message in data.get("inserted", []):
                    if message["source"]["kind"] != "user":
                        message["content"] = "<prose>"
            if e["type"] == "tool/result":
                for block in data["message"]["content"]:
                    if block.get("type") == "text":
                        block["text"] = skill_structure(block["text"])
        out.extend(events)

    class Flat:
        pass

    flat = Flat()
    flat.events = out
    return normalise_events([flat], [])


def structured_requests(requests, prompts) -> list[dict]:
    out = []
    for request in requests:
        if request["path"] != "/v1/messages":
            continue
        request = copy.deepcopy(request)
        known = list(prompts)
        for message in request["body"].get("messages", []):
            for block in message["content"]:
                if block.get("type") == "text" and block["text"].startswith(OPEN):
                    text = block["text"]
                    kind = "skill-catalog" if "<available_skills>" in text else "agent-instructions"
                    block["text"] = "STRUCTURE " + json.dumps(structure_of(text, kind))
                    known.append(block["text"])
                if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                    for inner in block["content"]:
                        if inner.get("type") == "text":
                            inner["text"] = skill_structure(inner["text"])
        out.append(normalise_request(request, known))
    return out


def write_files(root: Path, files: dict):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def run(binary, base: Path, server, steps, cwd="", files=None, home_files=None, env=None, profile=None):
    """Runs `steps` on session `s1`: a prompt (str), an action (callable
    taking the workspace) or RESUME (close the runtime, resume the
    session). Returns (results, stderr lines)."""
    base.mkdir(parents=True)
    (base / "home").mkdir()
    ws = base / "ws"
    ws.mkdir()
    write_files(ws, files or {})
    write_files(base / "dsh_home" / "skills", home_files or {})
    options = {"profile": profile} if profile else {}

    def harness():
        return DeepSeekHarness(
            dsh_bin=str(binary), dsh_home=str(base / "dsh_home"), cwd=str(ws / cwd),
            provider="deepseek-official", model="deepseek-v4-flash", base_url=server.base_url, api_key=KEY,
            request_timeout_seconds=FRAME_TIMEOUT, env={"HOME": str(base / "home"), **(env or {})}, **options,
        )

    results, stderr = [], []
    h = harness()
    try:
        session = h.start_session("s1")
        for step in steps:
            if step == RESUME:
                stderr += list(h.client._stderr_lines)  # the pinned SDK keeps the runtime's stderr here
                h.close()
                h = harness()
                session = h.resume_session("s1")
            elif callable(step):
                step(ws)
            else:
                results.append(session.run(step))
    finally:
        stderr += list(h.client._stderr_lines)
        h.close()
    return results, stderr


def messages(results, kind):
    return [e["data"] for r in results for e in r.events
            if e["type"] == "user/message" and e["data"]["source"]["kind"] == kind]


def call(name, arguments, call_id):
    return {"blocks": [{"tool_call": {"id": call_id, "name": name, "arguments": arguments}}]}


def skill_file(name, description, body="body\n"):
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def write(name, text):
    return lambda ws: write_files(ws, {name: text})


def remove(name):
    return lambda ws: os.remove(ws / name)


GIT = {".git/HEAD": "ref: refs/heads/main\n"}
FULL_ACCESS = {"DSH_PERMISSION_MODE": "danger-full-access"}

DIFFERENTIAL = {
    "instructions_root_sub_and_changes": dict(
        replies=[{"text": "R1"}, {"text": "R2"}, {"text": "R3"}],
        files={**GIT, "AGENTS.md": "Root rule.\n", "sub/CLAUDE.md": "Sub rule.\n", "sub/AGENTS.local.md": "local\n"},
        cwd="sub",
        steps=["first", write("AGENTS.md", "Root rule changed.\n"), remove("sub/AGENTS.local.md"),
               write("sub/AGENTS.md", "new sub\n"), "second", "third"],
    ),
    "instructions_budget": dict(
        replies=[{"text": "R1"}, {"text": "R2"}],
        files={**GIT, "AGENTS.md": "a" * 40000, "CLAUDE.md": "small root\n", "sub/AGENTS.md": "b" * 70000},
        cwd="sub",
        steps=["first", write("AGENTS.md", "root is small now\n"), "second"],
    ),
    "instructions_mid_turn_and_working_directory": dict(
        replies=[call("bash", {"description": "edit", "command": "echo v2 > AGENTS.md && echo c > CLAUDE.md"}, "toolu_b"),
                 call("working_directory", {"cd": "sub"}, "toolu_cd"), {"text": "done"}],
        files={**GIT, "AGENTS.md": "v1\n", "sub/AGENTS.md": "in sub\n"},
        env=FULL_ACCESS,
        steps=["go"],
    ),
    "skills_catalog_tool_and_changes": dict(
        replies=[{"blocks": [{"tool_call": {"id": "toolu_s1", "name": "skill", "arguments": {"name": "alpha"}}},
                             {"tool_call": {"id": "toolu_s2", "name": "skill", "arguments": {"name": "nope"}}},
                             {"tool_call": {"id": "toolu_s3", "name": "skill", "arguments": {}}}]},
                 {"text": "R1"}, {"text": "R2"}, {"text": "R3"}],
        files={".dsh/skills/alpha/SKILL.md": skill_file("alpha", "Alpha skill does A.", "# Alpha\nRun ./scripts/a.sh\n"),
               ".agents/skills/beta/SKILL.md": skill_file("beta", "Beta skill."),
               ".agents/skills/alpha/SKILL.md": skill_file("alpha", "Hidden by the .dsh one."),
               ".dsh/skills/bad/SKILL.md": "---\nname: [unclosed\n---\nbody\n",
               ".dsh/skills/folded/SKILL.md": "---\nname: folded\ndescription: >\n  Folded line\n  two.\n---\n\nfolded body\n"},
        home_files={"gamma/SKILL.md": skill_file("gamma", "Gamma from home.")},
        steps=["use skills", write(".dsh/skills/delta/SKILL.md", skill_file("delta", "Delta.")), "second",
               lambda ws: [shutil.rmtree(ws / f".dsh/skills/{n}") for n in ("alpha", "delta", "folded")], "third"],
    ),
    "resume_sends_only_what_changed": dict(
        replies=[{"text": "R1"}, {"text": "R2"}, {"text": "R3"}],
        files={**GIT, "AGENTS.md": "v1\n", "CLAUDE.md": "c1\n", ".dsh/skills/alpha/SKILL.md": skill_file("alpha", "A.")},
        steps=["first", RESUME, "second", write("AGENTS.md", "v2\n"),
               write(".dsh/skills/beta/SKILL.md", skill_file("beta", "B.")), RESUME, "third"],
    ),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIAL))
def test_same_instructions_and_skills_as_the_official_runtime(name, official_bin, dsh_bin, fake_model, base_dir):
    case = DIFFERENTIAL[name]
    kwargs = {k: case[k] for k in ("cwd", "files", "home_files", "env") if k in case}
    prompts = [s for s in case["steps"] if isinstance(s, str) and s != RESUME]
    servers = {}
    runs = {}
    for which, binary in (("official", official_bin), ("ours", dsh_bin)):
        servers[which] = fake_model(case["replies"])
        results, _ = run(binary, base_dir / which, servers[which], case["steps"], **kwargs)
        runs[which] = [unbase_result(r, base_dir / which) for r in results]
    for which in runs:
        kinds = [m["source"]["kind"] for m in messages(runs[which], "agent-instructions") + messages(runs[which], "skill-catalog")]
        assert kinds, f"{which}: no instructions or catalog at all"
    ours_requests = structured_requests(unbase(servers["ours"].requests(), base_dir / "ours"), prompts)
    official_requests = structured_requests(unbase(servers["official"].requests(), base_dir / "official"), prompts)
    assert ours_requests == official_requests
    ours, official = structured_events(runs["ours"]), structured_events(runs["official"])
    assert [e["type"] for e in ours] == [e["type"] for e in official]
    for mine, theirs in zip(ours, official):
        assert mine == theirs, f"event {theirs['type']} (seq {theirs['seq']}) differs"


def unbase_result(result, base: Path):
    result.events = unbase(result.events, base)
    return result


def test_instructions_structure_as_sent(dsh_bin, fake_model, base_dir):
    server = fake_model([{"text": "R1"}, {"text": "R2"}])
    files = {**GIT, "AGENTS.md": "Root rule.\n", "sub/CLAUDE.md": "Sub rule.\n"}
    results, _ = run(dsh_bin, base_dir / "run", server, ["first", write("sub/CLAUDE.md", "Sub v2.\n"), "second"],
                     cwd="sub", files=files)
    first = results[0].events
    kinds = [(e["type"], e["data"]["source"]["kind"]) for e in first if e["type"] == "user/message"]
    assert kinds == [("user/message", "user"), ("user/message", "agent-instructions"), ("user/message", "runtime-context")]
    baseline = messages(results[:1], "agent-instructions")[0]
    assert list(baseline["source"]) == ["kind", "form", "baseline", "baselineIdentity", "changes"]
    assert json.loads(baseline["source"]["baselineIdentity"])["projectRoot"] == ".."
    assert [list(c) for c in baseline["source"]["changes"]] == [["action", "scope", "path", "digest"]] * 2
    assert instructions_structure(baseline["content"][0]["text"])["sections"] == [
        ["file", "AGENTS.md", "Root rule.\n"], ["file", "sub/CLAUDE.md", "Sub rule.\n"]]
    (update,) = messages(results[1:], "agent-instructions")
    assert update["source"]["changes"][0]["action"] == "replace"
    assert instructions_structure(update["content"][0]["text"])["sections"] == [["changed", "sub/CLAUDE.md", "Sub v2.\n"]]


def test_unreadable_and_oversized_instructions_are_skipped_with_a_stderr_line(dsh_bin, fake_model, base_dir):
    server = fake_model([{"text": "fine"}])
    ws = base_dir / "run" / "ws"

    def setup(ws):
        (ws / "AGENTS.md").mkdir()  # not a file (tests may run as root: chmod 000 would still read)
        os.symlink(ws / "missing", ws / "CLAUDE.md")  # dangling
        (ws / "AGENTS.local.md").write_bytes(b"x" * (1024 * 1024 + 1))  # above the 1 MiB per source

    results, stderr = run(dsh_bin, base_dir / "run", server, [setup, "go"],
                          cwd="sub", files={**GIT, "sub/AGENTS.md": "readable\n"})
    assert results[0].final_response == "fine"
    (message,) = messages(results, "agent-instructions")
    assert [c["path"] for c in message["source"]["changes"]] == ["sub/AGENTS.md"]
    text = "\n".join(stderr)
    for name in ("AGENTS.md", "CLAUDE.md", "AGENTS.local.md"):
        assert f"instructions file {ws / name} skipped" in text, text


def test_skills_malformed_front_matter_and_the_unknown_name_lists_the_known(dsh_bin, fake_model, base_dir):
    replies = [call("skill", {"name": "nope"}, "toolu_1"), call("skill", {"name": "gamma"}, "toolu_2"), {"text": "ok"}]
    server = fake_model(replies)
    files = {".dsh/skills/alpha/SKILL.md": skill_file("alpha", "A."),
             ".agents/skills/beta/SKILL.md": skill_file("beta", "B."),
             ".dsh/skills/bad/SKILL.md": "---\nname: [unclosed\n---\nbody\n"}
    results, stderr = run(dsh_bin, base_dir / "run", server, ["go"], files=files,
                          home_files={"gamma/SKILL.md": skill_file("gamma", "G.", "See ./notes.md\n")})
    (catalog,) = messages(results, "skill-catalog")
    assert catalog["source"]["entries"] == [{"name": "alpha", "description": "A."}, {"name": "beta", "description": "B."},
                                            {"name": "gamma", "description": "G."}]
    assert "skill file " + str(base_dir / "run/ws/.dsh/skills/bad/SKILL.md") + " skipped" in "\n".join(stderr)
    unknown, gamma = [e["data"] for e in results[0].events if e["type"] == "tool/result"]
    assert unknown["message"]["isError"] and "error" not in unknown
    assert unknown["message"]["content"][0]["text"] == (
        'Error: skill "nope" is unknown or no longer available (available: alpha, beta, gamma)')
    loaded = json.loads(skill_structure(gamma["message"]["content"][0]["text"]))
    assert loaded == {"skill": "gamma", "dir": str(base_dir / "run/dsh_home/skills/gamma"), "body": "See ./notes.md",
                      "tail": ""}


def test_the_minimal_profile_sends_neither(dsh_bin, fake_model, base_dir):
    server = fake_model([call("skill", {"name": "alpha"}, "toolu_1"), {"text": "ok"}])
    files = {**GIT, "AGENTS.md": "Root rule.\n", ".dsh/skills/alpha/SKILL.md": skill_file("alpha", "A.")}
    results, _ = run(dsh_bin, base_dir / "run", server, ["go"], files=files, profile="sdk-minimal")
    kinds = {e["data"]["source"]["kind"] for e in results[0].events if e["type"] == "user/message"}
    assert kinds == {"user", "runtime-context"}
    header = next(e for e in results[0].events if e["type"] == "request/header")
    assert "skill" not in [t["name"] for t in header["data"]["header"]["tools"]]
    (result,) = [e["data"] for e in results[0].events if e["type"] == "tool/result"]
    assert result["message"]["isError"]
