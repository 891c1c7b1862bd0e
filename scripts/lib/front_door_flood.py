"""Hostile HTTP connections against one server's front door, and how each ended: the
status of the server's first response and how long after the connect the server closed
it. scripts/hostile's front-door cases run it against the publisher's embedded server
(docs/SECURITY.md, "Attack run"); by hand:

    python3 scripts/lib/front_door_flood.py --host 127.0.0.1 --port 8443 --idle 500 --slowloris 200

Every refusal of the front door is a response followed by a close, so a connection that
is neither answered nor closed by the end of --wait is what this looks for ("still_open";
"half_open" counts those the server's kernel had dropped before they were accepted: it
resets them when they send a byte at the end). Kinds, all opened at once, shuffled:
  idle            connects and sends nothing;
  slowloris       a request head one header line every --drip-seconds, never finished;
  malformed       four faults in equal shares: byte 0xff in the path, a 200 KiB header,
                  NUL in the method, HTTP/9.9;
  foreign-origin  a WebSocket upgrade from a page of https://evil.example;
  file-flood      keep-alive connections fetching --file-path as fast as they are
                  answered for --file-flood-seconds, reconnecting whenever closed.
Prints one JSON line per kind asked for; exits 0 unless it fails itself. Standard
library only. Connects have a time limit (--connect-timeout): a connect the server's
listen backlog never completes counts as not connected, it does not hang the run.
"""
import argparse, asyncio, base64, collections, json, os, random, resource, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import percentile, rnd   # noqa: E402

MALFORMED = {   # variant: the request head, Host filled in
    "0xff-path": b"GET /\xff HTTP/1.1\r\nHost: %s\r\n\r\n",
    "200KiB-header": b"GET / HTTP/1.1\r\nHost: %s\r\nX-Big: " + b"a" * 200 * 1024 + b"\r\n\r\n",
    "nul-method": b"G\x00T / HTTP/1.1\r\nHost: %s\r\n\r\n",
    "http-9.9": b"GET / HTTP/9.9\r\nHost: %s\r\n\r\n",
}
FOREIGN_UPGRADE = (b"GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + base64.b64encode(os.urandom(16)) +
                   b"\r\nOrigin: https://evil.example\r\n\r\n")


async def connect(args, index):
    """A connection from the index-th of --sources loopback addresses, within the time limit."""
    local = (f"127.0.0.{1 + index % args.sources}", 0) if args.sources > 1 else None
    return await asyncio.wait_for(asyncio.open_connection(args.host, args.port, local_addr=local), args.connect_timeout)


def status_of(head):
    """The status code of a response that begins with head, None when it is no response."""
    parts = head.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[0].startswith(b"HTTP/") and parts[1].isdigit() else None


async def send(writer, head, drip_seconds):
    """Writes head; with drip_seconds, then one more header line that often, for ever."""
    try:
        writer.write(head)
        await writer.drain()
        line = 0
        while drip_seconds:
            await asyncio.sleep(drip_seconds)
            line += 1
            writer.write(b"X-Slow-%d: 1\r\n" % line)
            await writer.drain()
    except OSError:   # the server closed it: what the reader records
        pass


async def read_until_closed(reader, record, connected):
    """Reads until the server closes (EOF or reset), recording the first status and when."""
    first = b""
    try:
        while chunk := await reader.read(65536):
            if record["status"] is None:
                first += chunk
                if b"\r\n" in first:
                    record["status"] = status_of(first.split(b"\r\n", 1)[0])
    except OSError:
        record["reset"] = True
    record["close_s"] = time.monotonic() - connected


async def forgotten(reader, writer):
    """Whether the server has no such connection: a byte sent on it is answered with a
    reset. Linux completes a connect from the client's side while the server's accept
    queue is full, drops the server's half, and tells a client that never sends nothing."""
    try:
        writer.write(b"\r\n")
        await writer.drain()
        await asyncio.wait_for(reader.read(1), 2)
    except OSError:
        return True
    except asyncio.TimeoutError:
        pass
    return False


async def hostile(args, kind, variant, head, index, deadline, drip_seconds=0):
    """One connection of a kind, from connect to the server's close or the deadline."""
    record = {"kind": kind, "variant": variant, "connect_s": None, "status": None, "close_s": None, "reset": False,
              "half_open": False}
    started = time.monotonic()
    try:
        reader, writer = await connect(args, index)
    except (OSError, asyncio.TimeoutError):
        return record
    connected = time.monotonic()
    record["connect_s"] = connected - started
    sender = asyncio.create_task(send(writer, head, drip_seconds))
    try:
        await asyncio.wait_for(read_until_closed(reader, record, connected), max(0.0, deadline - connected))
    except asyncio.TimeoutError:   # still open at the deadline: does the server know it at all?
        record["half_open"] = await forgotten(reader, writer)
    finally:
        sender.cancel()
        writer.transport.abort()
    return record


def summary(kind, records):
    """The JSON line of one kind."""
    connected = [r for r in records if r["connect_s"] is not None]
    closes = [r["close_s"] for r in connected if r["close_s"] is not None]
    tally = lambda rs: dict(sorted(collections.Counter(str(r["status"] or "none") for r in rs).items()))
    line = {"kind": kind, "count": len(records), "connected": len(connected), "statuses": tally(connected),
            "closed": len(closes), "close_s_p50": rnd(percentile(closes, 50)), "close_s_max": rnd(max(closes, default=None)),
            "still_open": sum(r["close_s"] is None and not r["half_open"] for r in connected),
            "half_open": sum(r["half_open"] for r in connected), "not_connected": len(records) - len(connected),
            "resets": sum(r["reset"] for r in connected),
            "connect_s_max": rnd(max((r["connect_s"] for r in connected), default=None))}
    variants = sorted({r["variant"] for r in records if r["variant"]})
    if variants:
        line["variants"] = {v: tally([r for r in connected if r["variant"] == v]) for v in variants}
    return line


# --- the file flood -------------------------------------------------------------

async def read_response(reader):
    """(status, keep-alive) of one response, its body read and dropped."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip().lower() for k, _, v in (l.partition(":") for l in lines[1:] if l)}
    if headers.get("transfer-encoding") == "chunked":
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            await reader.readexactly(size + 2)
        await reader.readuntil(b"\r\n")
    else:
        await reader.readexactly(int(headers.get("content-length", "0")))
    return status_of(head), headers.get("connection") != "close"


async def fetcher(args, index, stop_at, tally):
    """One keep-alive client asking for the file until stop_at, reconnecting when closed."""
    request = b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (args.file_path.encode(), args.host_header)
    while time.monotonic() < stop_at:
        try:
            reader, writer = await connect(args, index)
        except (OSError, asyncio.TimeoutError):
            tally["connect_failures"] += 1
            await asyncio.sleep(0.1)   # a refused connect returns at once: no busy loop
            continue
        tally["connections"] += 1
        try:
            keep = True
            while keep and time.monotonic() < stop_at:
                writer.write(request)
                status, keep = await asyncio.wait_for(read_response(reader), args.connect_timeout)
                tally["requests"] += 1
                tally["statuses"][str(status)] += 1
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError):
            tally["closed_mid_request"] += 1
        finally:
            writer.transport.abort()


async def file_flood(args):
    tally = {"connections": 0, "connect_failures": 0, "requests": 0, "closed_mid_request": 0,
             "statuses": collections.Counter()}
    started = time.monotonic()
    stop_at = started + args.file_flood_seconds
    await asyncio.gather(*(fetcher(args, i, stop_at, tally) for i in range(args.file_flood_connections)))
    seconds = time.monotonic() - started
    return {"kind": "file-flood", "clients": args.file_flood_connections, "path": args.file_path, **tally,
            "statuses": dict(sorted(tally["statuses"].items())), "requests_per_s": round(tally["requests"] / seconds, 1),
            "seconds": round(seconds, 1)}


# --- the run --------------------------------------------------------------------

async def run(args):
    host = args.host_header
    deadline = time.monotonic() + args.wait
    plans = [("idle", [(None, b"")] * args.idle, 0),
             ("slowloris", [(None, b"GET / HTTP/1.1\r\nHost: %s\r\n" % host)] * args.slowloris, args.drip_seconds),
             ("malformed", [(v, MALFORMED[v] % host) for v in (list(MALFORMED)[i % len(MALFORMED)]
                                                               for i in range(args.malformed))], 0),
             ("foreign-origin", [(None, FOREIGN_UPGRADE % host)] * args.foreign_origin, 0)]
    # Shuffled (the same way every run), so that every kind, not only the first, meets
    # the server while it still has room for one more connection from this address.
    order = [(kind, variant, head, drip) for kind, heads, drip in plans for variant, head in heads]
    random.Random(35).shuffle(order)
    tasks = {kind: [] for kind, _, _ in plans}
    for index, (kind, variant, head, drip) in enumerate(order):
        tasks[kind].append(asyncio.create_task(hostile(args, kind, variant, head, index, deadline, drip)))
    flood = asyncio.create_task(file_flood(args)) if args.file_flood_connections else None
    lines = [summary(kind, await asyncio.gather(*ts)) for kind, ts in tasks.items() if ts]
    if flood:
        lines.append(await flood)
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--idle", type=int, default=0)
    parser.add_argument("--slowloris", type=int, default=0)
    parser.add_argument("--drip-seconds", type=float, default=5, help="slowloris: seconds between header lines")
    parser.add_argument("--malformed", type=int, default=0, help="the four faults in turn")
    parser.add_argument("--foreign-origin", type=int, default=0)
    parser.add_argument("--file-flood-connections", type=int, default=0)
    parser.add_argument("--file-flood-seconds", type=float, default=20)
    parser.add_argument("--file-path", default="/console.js")
    parser.add_argument("--wait", type=float, default=30, help="seconds for every connection to be answered and closed")
    parser.add_argument("--connect-timeout", type=float, default=10)
    parser.add_argument("--sources", type=int, default=1,
                        help="spread the connections over 127.0.0.1…127.0.0.N (past per-address limits)")
    args = parser.parse_args()
    args.host_header = f"{args.host}:{args.port}".encode()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))   # a thousand sockets and more
    for line in asyncio.run(run(args)):
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
