#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A /metrics endpoint that answers each scrape from a schedule of hostile answers, a good
vLLM answer between each two, then good ones: what --server-metrics must refuse, each
under its own cause, without keeping a number of it.

hostile_metrics.py PORT LOG
    LOG.ready appears once it listens; LOG gets a JSON line per answer ({"n", "case", "status": the status specprobe must
    record, "values": {family: value} of a good one}); LOG.done appears once the schedule
    and GOOD_AFTER good answers after it were served.

Good answers count g = 1, 2, ...: drafts 10 g, draft tokens 30 g, accepted 16 g, generated
26 g, so the report's accept length over any span of them is 2.6 and its acceptance rate
16/30. A hostile answer's other counters hold MARK, which no good answer does.
"""
import json
import socket
import sys

MARK = 777777
GOOD_AFTER = 3
DRAFTS, DRAFT_TOKENS, ACCEPTED, GENERATED = 1, 2, 3, 4
NAMES = {DRAFTS: "vllm:spec_decode_num_drafts_total",
         DRAFT_TOKENS: "vllm:spec_decode_num_draft_tokens_total",
         ACCEPTED: "vllm:spec_decode_num_accepted_tokens_total",
         GENERATED: "vllm:generation_tokens_total"}
LBL = '{engine="0",model_name="hostile"}'


def body(values, generated_line=None):
    """A vLLM body; generated_line replaces the generated-tokens sample."""
    lines = ["# TYPE vllm:num_requests_running gauge", f"vllm:num_requests_running{LBL} 1.0"]
    for fam, name in NAMES.items():
        lines.append(f"# TYPE {name[:-6]} counter")
        if fam == GENERATED and generated_line is not None:
            lines.append(generated_line)
        else:
            lines.append(f"{name}{LBL} {values[fam]:.1f}")
    return ("\n".join(lines) + "\n").encode()


def head(length=None, extra=""):
    h = "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
    if length is not None:
        h += f"Content-Length: {length}\r\n"
    return (h + extra + "\r\n").encode()


def whole(b):
    return head(len(b)) + b


MARKS = {f: MARK for f in NAMES}
GEN = NAMES[GENERATED] + LBL


def bad_value(text):
    return lambda conn: conn.sendall(whole(body(MARKS, f"{GEN} {text}")))


def stream_huge(conn):
    """100 MB with no Content-Length: the cap, not the timeout, must stop it."""
    conn.sendall(head())
    chunk = (b"#" * 79 + b"\n") * 13108
    for _ in range(100):
        conn.sendall(chunk)


# (case, status specprobe must record, how to answer)
SCHEDULE = [
    ("negative", "bad_value", bad_value("-5")),
    ("nan", "bad_value", bad_value("NaN")),
    ("inf", "bad_value", bad_value("+Inf")),
    ("neg-inf", "bad_value", bad_value("-Inf")),
    ("1e308", "bad_value", bad_value("1e308")),
    ("hex", "bad_sample", bad_value("0x10")),
    ("fields", "bad_sample", bad_value("1 2 3 4")),
    ("neg-length", "bad_length",
     lambda conn: conn.sendall(head(-1) + body(MARKS))),
    ("closed", "closed", lambda conn: None),
    ("cut-body", "closed", lambda conn: conn.sendall(head(1000) + body(MARKS)[:100])),
    ("big-declared", "too_big", lambda conn: conn.sendall(head(100000000) + body(MARKS))),
    ("big-streamed", "too_big", stream_huge),
    ("chunked", "not_text", lambda conn: conn.sendall(
        head(None, "Transfer-Encoding: chunked\r\n") + b"1a\r\n" + body(MARKS)[:26] + b"\r\n0\r\n\r\n")),
    ("no-family", "no_family",
     lambda conn: conn.sendall(whole(b"process_cpu_seconds_total 1.5\n"))),
]


def main():
    port, log_path = int(sys.argv[1]), sys.argv[2]
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(16)
    log = open(log_path, "w", buffering=1)
    open(log_path + ".ready", "w").close()
    good = bad = after = 0
    for n in range(1, 100000):
        conn, _ = srv.accept()
        try:
            req = b""
            while b"\r\n\r\n" not in req:
                got = conn.recv(4096)
                if not got:
                    break
                req += got
            # a hostile answer after each good one, until the schedule is spent
            if bad < len(SCHEDULE) and good > bad:
                case, status, answer = SCHEDULE[bad]
                bad += 1
                line = {"n": n, "case": case, "status": status}
            else:
                good += 1
                vals = {DRAFTS: 10 * good, DRAFT_TOKENS: 30 * good, ACCEPTED: 16 * good,
                        GENERATED: 26 * good}
                line = {"n": n, "case": "good", "status": "ok", "values": vals}
                answer = lambda c, v=vals: c.sendall(whole(body(v)))  # noqa: E731
                after += bad == len(SCHEDULE)
            log.write(json.dumps(line) + "\n")
            answer(conn)
        except OSError:
            pass  # the scraper gave up on it (too big): what it must do
        finally:
            conn.close()
        if after == GOOD_AFTER:
            open(log_path + ".done", "w").close()


if __name__ == "__main__":
    main()
