#!/usr/bin/python3
"""WebSocket echo origin for test_websocket.py (python `websockets`, the
Debian package python3-websockets).

  ws_server.py --ws 8090 --wss 8490 --cert C --key K --log FILE --ready PATH

Every HTTP request that reaches it (an opening handshake or not) is logged
as a JSON line {"event": "request", "scheme", "path", "upgrade", "host"}
before anything is answered, so a test can prove a refused request never
arrived; a finished WebSocket as {"event": "closed", "path", "messages",
"bytes"}.  Paths under /refuse/ are answered 403 (the origin refuses the
upgrade); every other WebSocket echoes each message back.  Runs in the
world netns; exits on SIGTERM.
"""
import argparse
import asyncio
import http
import json
import signal
import ssl
import time

import websockets

LOG = None


def record(**kw):
    kw["t"] = time.time()
    LOG.write(json.dumps(kw) + "\n")
    LOG.flush()


def handlers(scheme):
    async def process_request(path, headers):
        record(event="request", scheme=scheme, path=path, upgrade=headers.get("Upgrade", ""),
               host=headers.get("Host", ""))
        if path.startswith("/refuse/"):
            return http.HTTPStatus.FORBIDDEN, [("Content-Type", "text/plain")], b"the origin refuses this upgrade\n"
        return None

    async def echo(ws, path):
        n = size = 0
        try:
            async for msg in ws:
                n += 1
                size += len(msg)
                await ws.send(msg)
        finally:
            record(event="closed", scheme=scheme, path=path, messages=n, bytes=size)
    return process_request, echo


async def main(a):
    servers = []
    pr, echo = handlers("ws")
    servers.append(await websockets.serve(echo, "0.0.0.0", a.ws, process_request=pr, compression=None))
    if a.wss:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
        pr, echo = handlers("wss")
        servers.append(await websockets.serve(echo, "0.0.0.0", a.wss, ssl=ctx, process_request=pr,
                                              compression=None))
    open(a.ready, "w").close()
    stop = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set_result, None)
    await stop


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--ws", type=int, required=True)
    p.add_argument("--wss", type=int)
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--log", required=True)
    p.add_argument("--ready", required=True)
    a = p.parse_args()
    LOG = open(a.log, "a")
    asyncio.run(main(a))
