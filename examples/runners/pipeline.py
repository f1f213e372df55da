#!/usr/bin/env python3
"""A complete runner (runner contract v1, docs/workloads.md) in Python, standard library only.

The same toy pipeline as pipeline.ts, learning y = 3x: each stage holds one weight; stage 0 makes
the batches and sends activations forward; the last stage computes the loss and sends the gradient
back. Frames go through the agent at SVC_DATA_URL in the relay's encoding (u32 meta length, meta
JSON, u64 data length, data; big-endian lengths); the data here is little-endian float32.

    svc fellow ... --runner "toy=python3 /path/to/pipeline.py"
    job config: {"steps": 200, "lr": 0.5}
"""
import http.client
import json
import os
import re
import signal
import stat
import struct
import sys
import threading
import time
import urllib.error
import urllib.request

DATA = os.environ["SVC_DATA_URL"]
STAGE = int(os.environ["SVC_STAGE"])
STAGES = int(os.environ["SVC_STAGES"])
CONFIG = json.loads(os.environ.get("SVC_JOB_CONFIG") or "{}")
STEPS = int(CONFIG.get("steps", 200))
LR = float(CONFIG.get("lr", 0.5))
STEP_MS = float(CONFIG.get("step_ms", 0))
BATCH = 8
FIRST = STAGE == 0
LAST = STAGE == STAGES - 1

state = {"w": 0.5 + 0.1 * STAGE, "step": 0, "checkpoint": False, "stopping": False}
signal.signal(signal.SIGUSR1, lambda *_: state.update(checkpoint=True))
signal.signal(signal.SIGTERM, lambda *_: state.update(stopping=True))


def watch_agent():
    # stdin is a pipe (or socket) from the agent that nobody writes to: its end means the agent is gone.
    while os.read(0, 65536):
        pass
    state.update(stopping=True)


if stat.S_ISFIFO(os.fstat(0).st_mode) or stat.S_ISSOCK(os.fstat(0).st_mode):
    threading.Thread(target=watch_agent, daemon=True).start()

resume = os.environ.get("SVC_RESUME_FROM")
if resume:
    files = sorted((f for f in os.listdir(resume) if re.fullmatch(r"ckpt-\d+\.json", f)), key=lambda f: int(f[5:-5]))
    if files:
        with open(os.path.join(resume, files[-1])) as fh:
            saved = json.load(fh)
        state["w"], state["step"] = saved["w"], saved["step"]


def save_checkpoint():
    d = os.environ["SVC_CHECKPOINT_DIR"]
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "ckpt-%d.json" % state["step"]), "w") as fh:
        json.dump({"w": state["w"], "step": state["step"]}, fh)
    print(json.dumps({"checkpoint": d, "step": state["step"]}), flush=True)
    state["checkpoint"] = False


def encode(meta, values):
    m = json.dumps(meta).encode()
    data = struct.pack("<%df" % len(values), *values)
    return struct.pack(">I", len(m)) + m + struct.pack(">Q", len(data)) + data


def decode(body):
    frames, at = [], 0
    while at < len(body):
        (meta_len,) = struct.unpack_from(">I", body, at)
        meta = json.loads(body[at + 4 : at + 4 + meta_len])
        (data_len,) = struct.unpack_from(">Q", body, at + 4 + meta_len)
        start = at + 12 + meta_len
        frames.append((meta, list(struct.unpack_from("<%df" % (data_len // 4), body, start))))
        at = start + data_len
    return frames


def call(request):
    """One call to SVC_DATA_URL: (status, body), or None when the stage is stopping. The agent
    answers 410 once it sent SIGTERM, and an endpoint that refuses or resets the connection while
    this runner is being stopped (or its agent is gone) is the end too, not an error to crash on."""
    try:
        with urllib.request.urlopen(request) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        body = e.read()
        if e.code != 410:
            return e.code, body
    except (urllib.error.URLError, ConnectionError, http.client.HTTPException):
        # SIGTERM or the end of stdin may come a moment after the endpoint went away.
        for _ in range(40):
            if state["stopping"]:
                break
            time.sleep(0.05)
        if not state["stopping"]:
            raise
    state["stopping"] = True
    return None


def send(channel, step, values):
    while not state["stopping"]:
        got = call(urllib.request.Request(DATA + "/" + channel, data=encode({"step": step}, values), method="POST"))
        if got is None or got[0] == 202:
            return
        time.sleep(0.2)  # 503: the neighbour is not reachable yet


def receive(channel, want, timeout_s):
    end = time.time() + timeout_s
    while not state["stopping"] and time.time() < end:
        got = call(DATA + "/" + channel + "?wait_ms=1000&max=1")
        if got is None:
            return None
        if got[0] != 200:
            continue
        for meta, values in decode(got[1]):
            if want is None or meta.get("step") == want:
                return meta, values
    return None


def batch(s):
    return [((s * 7 + i * 13) % 17) / 17 - 0.5 for i in range(BATCH)]


while not state["stopping"] and state["step"] < STEPS:
    if state["checkpoint"]:
        save_checkpoint()
    w = state["w"]
    if FIRST:
        s = state["step"] + 1
        x = batch(s)
        y = [w * v for v in x]
        if LAST:
            g = [2 * (v - 3 * xi) / BATCH for v, xi in zip(y, x)]
            state["w"] -= LR * sum(gi * xi for gi, xi in zip(g, x))
            state["step"] = s
            print(json.dumps({"step": s, "loss": sum((v - 3 * xi) ** 2 for v, xi in zip(y, x)) / BATCH}), flush=True)
        else:
            send("activations", s, y)
            got = receive("gradients", s, 5)
            if got is None:
                continue  # lost on the way (a neighbour moved): send this step again
            g = got[1]
            state["w"] -= LR * sum(gi * xi for gi, xi in zip(g, x))
            state["step"] = s
            print(json.dumps({"step": s}), flush=True)
    else:
        got = receive("activations", None, 60)
        if got is None:
            continue
        meta, x = got
        s = meta["step"]
        y = [w * v for v in x]
        if LAST:
            target = [3 * v for v in batch(s)]
            g = [2 * (v - t) / BATCH for v, t in zip(y, target)]
            dx = [gi * w for gi in g]
            state["w"] -= LR * sum(gi * xi for gi, xi in zip(g, x))
            state["step"] = s
            print(json.dumps({"step": s, "loss": sum((v - t) ** 2 for v, t in zip(y, target)) / BATCH}), flush=True)
        else:
            send("activations", s, y)
            back = receive("gradients", s, 5)
            if back is None:
                continue
            g = back[1]
            dx = [gi * w for gi in g]
            state["w"] -= LR * sum(gi * xi for gi, xi in zip(g, x))
            state["step"] = s
        send("gradients", s, dx)
    if STEP_MS:
        time.sleep(STEP_MS / 1000)

if state["checkpoint"]:
    save_checkpoint()
# Stopped (SIGTERM, the agent gone): 143 (128 + SIGTERM), quietly. Not 0: a stopped stage has not
# finished, and the last stage's exit 0 would say the job completed.
sys.exit(143 if state["stopping"] else 0)
