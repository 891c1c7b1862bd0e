"""The router of scripts/bench-paths: delay and random loss on a kernel path, which this
kernel cannot add itself (no netem). Runs inside the router's network namespace, where
policy routing sends every packet that arrives from either side into the TUN device it
opens; it holds each packet for the one-way delay of its direction, drops it with the
loss probability, and writes it back, and the kernel routes it on (the rate limit is the
kernel's own `tbf` on the router's way out). Order is kept within a direction.

    python3 path_forwarder.py TUN_NAME

Commands on stdin, one per line:  set DELAY_MS LOSS_PCT   (both directions), quit.
Prints "ready" once the device is open, and "set …" after each change."""
import fcntl, heapq, os, random, select, struct, sys, time

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000


def main():
    tun = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(tun, TUNSETIFF, struct.pack("16sH", sys.argv[1].encode(), IFF_TUN | IFF_NO_PI))
    delay, loss = 0.0, 0.0
    held = []          # (due, order, packet)
    order = 0
    print("ready", flush=True)
    stdin = sys.stdin.fileno()
    while True:
        timeout = max(0.0, held[0][0] - time.monotonic()) if held else None
        readable, _, _ = select.select([tun, stdin], [], [], timeout)
        if stdin in readable:
            line = sys.stdin.readline()
            words = line.split()
            if not line or words[:1] == ["quit"]:
                return
            if words[:1] == ["set"] and len(words) == 3:
                delay, loss = float(words[1]) / 1000, float(words[2]) / 100
                print(f"set delay {words[1]} ms, loss {words[2]} %", flush=True)
        if tun in readable:
            packet = os.read(tun, 65535)
            if random.random() >= loss:
                heapq.heappush(held, (time.monotonic() + delay, order, packet))
                order += 1
        now = time.monotonic()
        while held and held[0][0] <= now:
            os.write(tun, heapq.heappop(held)[2])


if __name__ == "__main__":
    main()
