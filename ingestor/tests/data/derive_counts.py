#!/usr/bin/env python3
"""Independent derivation of the conformance numbers in tests/conformance.rs.

Reads a fixture's raw JSON (it does not run the Rust parser) and prints
sessions, msg_in, msg_out, tool_calls, tool_results, reads, edits and the
expected diagnostics, following the mapping documented in each adapter module.

    python3 ingestor/tests/data/derive_counts.py <harness> <path>
"""
import json
import os
import re
import sys
from datetime import datetime


def ts_ok(v):
    if v is None:
        return True
    if isinstance(v, (int, float)):
        return True
    try:
        datetime.fromisoformat(str(v).replace("Z", "+00:00"))
        return True
    except ValueError:
        return False


def claude(path):
    recs = [json.loads(l) for l in open(path) if l.strip()]
    agent_file = os.path.basename(path).startswith("agent-")
    first_sid = next((r["sessionId"] for r in recs if r.get("sessionId")), None)
    c = dict(sessions=0, msg_in=0, msg_out=0, tool_calls=0, tool_results=0, reads=0, edits=0, bad_ts=0, unjoined=0)
    mains, roots, side, cur = set(), set(), {}, None
    calls = []  # [id, name, input, synthetic, session]
    for r in recs:
        if not ts_ok(r.get("timestamp")):
            c["bad_ts"] += 1
        if agent_file:
            sess = "agent"
        else:
            sid = r.get("sessionId") or cur or first_sid
            cur = sid
            if r.get("isSidechain") is True and r.get("uuid"):
                root = side.get(r.get("parentUuid")) if r.get("parentUuid") else None
                if root is None:
                    root = r["uuid"]
                    roots.add(root)
                side[r["uuid"]] = root
                sess = "side:" + root
            else:
                mains.add(sid)
                sess = sid
        t = r.get("type")
        content = (r.get("message") or {}).get("content")
        if t == "user":
            if isinstance(content, str):
                c["msg_in"] += 1
            elif isinstance(content, list):
                blocks = [b for b in content if b.get("type") == "tool_result"]
                for b in content:
                    if b.get("type") == "text":
                        c["msg_in"] += 1
                    if b.get("type") != "tool_result":
                        continue
                    c["tool_results"] += 1
                    tid = b.get("tool_use_id") or r.get("sourceToolUseID")
                    call = next((x for x in calls if x[0] == tid), None)
                    if call is None:
                        call = next((x for x in calls if x[3] and x[4] == sess), None)
                    if call is None:
                        c["unjoined"] += 1
                        continue
                    calls.remove(call)
                    tur = r.get("toolUseResult") if len(blocks) == 1 else None
                    if b.get("is_error") or isinstance(tur, str):
                        continue
                    tur = tur if isinstance(tur, dict) else {}
                    inp = call[2] if isinstance(call[2], dict) else {}
                    if call[1] == "Read":
                        if (tur.get("file") or {}).get("filePath") or inp.get("file_path"):
                            c["reads"] += 1
                    if call[1] in ("Edit", "MultiEdit", "Write"):
                        if tur.get("filePath") or inp.get("file_path"):
                            c["edits"] += max(1, len(tur.get("structuredPatch") or []))
        elif t == "assistant":
            if isinstance(content, str):
                c["msg_out"] += 1
            for i, b in enumerate(content if isinstance(content, list) else []):
                if b.get("type") in ("text", "thinking"):
                    c["msg_out"] += 1
                if b.get("type") == "tool_use":
                    c["tool_calls"] += 1
                    calls.append([b.get("id") or "%s#%d" % (r.get("uuid"), i), b.get("name"), b.get("input"), not b.get("id"), sess])
        elif t == "attachment":
            if (r.get("attachment") or {}).get("type") in ("hook_additional_context", "nested_memory", "queued_command"):
                c["msg_in"] += 1
        elif t == "tool_use":
            c["tool_calls"] += 1
            calls.append([r.get("uuid"), r.get("name"), r.get("input"), True, sess])
        elif t == "tool_result":
            c["tool_results"] += 1
            call = next((x for x in calls if x[3] and x[4] == sess), None)
            if call is None:
                c["unjoined"] += 1
            else:
                calls.remove(call)
    c["sessions"] = 1 if agent_file else len(mains) + len(roots)
    return c


def codex(path):
    recs = [json.loads(l) for l in open(path) if l.strip()]
    c = dict(sessions=0, msg_in=0, msg_out=0, tool_calls=0, tool_results=0, reads=0, edits=0, bad_ts=0, unjoined=0, self_parent=0)
    cur, started, calls, patched = None, False, {}, set()
    call_types = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call", "image_generation_call")
    out_types = ("function_call_output", "custom_tool_call_output", "tool_search_output")
    for r in recs:
        if not ts_ok(r.get("timestamp", r.get("created_at"))):
            c["bad_ts"] += 1
        p = r.get("payload")
        if p is None:
            if not started:
                c["sessions"] += 1
                started = True
            if r.get("role"):
                c["msg_out" if r["role"] == "assistant" else "msg_in"] += 1
            elif r.get("type") == "function_call":
                c["tool_calls"] += 1
                calls[r.get("call_id") or r.get("name") or r["function"]["name"]] = None
            elif r.get("type") in ("function_call_output", "function_result"):
                c["tool_results"] += 1
                if calls.pop(r.get("call_id") or r.get("name") or "", 0) == 0:
                    c["unjoined"] += 1
            continue
        t = r.get("type")
        if t == "session_meta":
            if not started or p.get("id") != cur:
                c["sessions"] += 1
                calls = {}
                parent = (((p.get("source") or {}) if isinstance(p.get("source"), dict) else {}).get("subagent") or {}).get("thread_spawn", {}).get("parent_thread_id") or p.get("forked_from_id") or p.get("parent_thread_id")
                if parent and parent == p.get("id"):
                    c["self_parent"] += 1
            cur, started = p.get("id"), True
            continue
        if not started:
            c["sessions"] += 1
            started = True
        pt = p.get("type")
        if t == "compacted" and p.get("message"):
            c["msg_in"] += 1
        if t != "response_item" and t != "event_msg":
            continue
        if t == "response_item":
            if pt == "message":
                c["msg_out" if p.get("role") == "assistant" else "msg_in"] += 1
            elif pt == "agent_message":
                c["msg_in"] += 1
            elif pt == "reasoning":
                if any(s.get("text") for s in p.get("summary") or []):
                    c["msg_out"] += 1
            elif pt in call_types:
                c["tool_calls"] += 1
                inp = p.get("input") if pt == "custom_tool_call" else p.get("arguments")
                calls[p.get("call_id") or p.get("id") or ""] = inp if isinstance(inp, str) and "*** Begin Patch" in inp else None
            elif pt in out_types:
                c["tool_results"] += 1
                cid = p.get("call_id") or ""
                if cid not in calls:
                    c["unjoined"] += 1
                    continue
                patch = calls.pop(cid)
                out = p.get("output")
                text = out if isinstance(out, str) else json.dumps(out)
                m = re.search(r"Exit code: (\d+)", text)
                ok = (m and m.group(1) == "0") or "Success" in text
                if patch and ok and cid not in patched:
                    c["edits"] += len(re.findall(r"^\*\*\* (Add|Update|Delete) File", patch, re.M))
        else:
            if pt == "exec_command_end":
                c["reads"] += sum(1 for x in p.get("parsed_cmd") or [] if x.get("type") == "read" and (x.get("path") or x.get("name")))
            if pt == "patch_apply_end" and p.get("success", True) and p.get("status", "completed") == "completed":
                for ch in (p.get("changes") or {}).values():
                    diff = ch.get("unified_diff") or ""
                    c["edits"] += max(1, len(re.findall(r"^@@ ", diff, re.M)))
                patched.add(p.get("call_id"))
    return c


def gemini_jsonl(path):
    recs = [json.loads(l) for l in open(path) if l.strip()]
    return gemini_messages([r for r in recs if "id" in r and "type" in r], recs)


def gemini_legacy(path):
    doc = json.load(open(path))
    return gemini_messages(doc.get("messages", []), [doc])


def gemini_messages(msgs, recs):
    c = dict(sessions=1, msg_in=0, msg_out=0, tool_calls=0, tool_results=0, reads=0, edits=0, bad_ts=0, unjoined=0)
    last = {}
    for m in msgs:
        last[m["id"]] = m  # last write wins
    for m in last.values():
        if m["type"] == "user":
            c["msg_in"] += 1
        elif m["type"] == "gemini":
            c["msg_out"] += len(m.get("thoughts") or [])
            if m.get("content") or "toolCalls" not in m:
                c["msg_out"] += 1
            for tc in m.get("toolCalls") or []:
                c["tool_calls"] += 1
                if tc.get("result") is not None:
                    c["tool_results"] += 1
                    ok = tc.get("status") not in ("error", "cancelled")
                    a = tc.get("args") or {}
                    has_file = a.get("file_path") or a.get("absolute_path") or a.get("path")
                    if ok and has_file and tc["name"] == "read_file":
                        c["reads"] += 1
                    if ok and has_file and tc["name"] in ("write_file", "replace", "edit"):
                        c["edits"] += 1
    return c


def opencode(root):
    c = dict(sessions=0, msg_in=0, msg_out=0, tool_calls=0, tool_results=0, reads=0, edits=0, bad_ts=0, unjoined=0)
    c["sessions"] = sum(len(fs) for _, _, fs in os.walk(os.path.join(root, "session")))
    roles = {}
    for d, _, fs in os.walk(os.path.join(root, "message")):
        for f in fs:
            m = json.load(open(os.path.join(d, f)))
            roles[m["id"]] = m["role"]
    for d, _, fs in os.walk(os.path.join(root, "part")):
        for f in fs:
            p = json.load(open(os.path.join(d, f)))
            role = roles[os.path.basename(d)]
            if p["type"] == "text":
                c["msg_in" if role == "user" else "msg_out"] += 1
            elif p["type"] == "reasoning":
                c["msg_out"] += 1
            elif p["type"] == "tool":
                c["tool_calls"] += 1
                st = p.get("state") or {}
                if st.get("status") in ("completed", "error"):
                    c["tool_results"] += 1
                    ok = st["status"] == "completed" and (st.get("metadata") or {}).get("exit", 0) == 0
                    if ok and p["tool"] == "read":
                        c["reads"] += 1
                    if ok and p["tool"] in ("edit", "write"):
                        c["edits"] += 1
    return c


if __name__ == "__main__":
    kind, path = sys.argv[1], sys.argv[2]
    f = {"claude": claude, "codex": codex, "gemini": gemini_jsonl, "gemini-legacy": gemini_legacy, "opencode": opencode}[kind]
    print(json.dumps(f(path)))
