# A DNS responder for the agent's benchmarks (run.sh, peers.sh): answers every A query for any name
# with ADDRESS, other types with no record. Usage: python3 dnsresponder.py LISTEN_IP ADDRESS
import socket
import struct
import sys

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
address = socket.inet_aton(sys.argv[2])
while True:
    q, a = s.recvfrom(512)
    end = 12
    while q[end] != 0:
        end += 1 + q[end]
    qtype = struct.unpack(">H", q[end + 1:end + 3])[0]
    an = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 5, 4) + address if qtype == 1 else b""
    s.sendto(q[:2] + struct.pack(">HHHHH", 0x8180, 1, 1 if an else 0, 0, 0) + q[12:end + 5] + an, a)
