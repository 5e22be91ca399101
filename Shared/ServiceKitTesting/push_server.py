#!/usr/bin/env python3
"""A push service stand-in for tests: APNs' provider API and Web Push endpoints, over
HTTP/2 with TLS (Debian's python3-h2 and python3-cryptography), checking what arrives
with implementations independent of the server's.

APNs:     POST /3/device/<token>. The provider token (ES256 JWT) is checked against
          the public half of --apns-key with its kid and iss; apns-topic, apns-push-type,
          apns-priority and apns-expiration must be present, the payload must be JSON
          with aps.alert. Faults: --gone tokens answer 410, --bad tokens 400
          BadDeviceToken, the first --busy-first requests 429.
Web Push: POST /push/<name>. The VAPID header (RFC 8292) is checked (the JWT against
          its own k, its aud), the aes128gcm body (RFC 8291) decrypted with the
          subscription key this server made (printed at start). --webpush-gone names
          answer 410.
--jitter S answers each request after a random wait of up to S seconds, so requests
          sent side by side are taken (and kept) out of order.
--delay S answers each request S seconds late (before any jitter; HTTP/1.1 too): a slow push service.
--goaway-after N  sends a GOAWAY on each HTTP/2 connection once its N-th stream opens:
          the first N streams are answered, later ones are not (the client's to
          send again elsewhere); the connection stays open.
--reset-after-answer  follows each answer with RST_STREAM (NO_ERROR), as nginx does when it
          answers before a request's body has all come (RFC 9113 8.1 lets a server do so, and
          the client must keep the answer).
--http1   offers only HTTP/1.1 by ALPN and speaks it (keep-alive, one request at a
          time per connection), as some Web Push services do.
--http1-close  with --http1: each answer says `connection: close`, and the connection closes.

Every push taken is appended to <dir>/pushes.jsonl; every request that broke a rule to
<dir>/errors.jsonl; <dir>/connections counts the TLS connections made, <dir>/closed
those closed since. Prints
"READY <p256dh> <auth>" once listening; stops when stdin closes.
"""
import argparse, asyncio, base64, json, os, random, ssl, sys, time

import h2.config, h2.connection, h2.events
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def verify_jwt(token, public_key):
    """The JWT's header and claims when its ES256 signature verifies; raises otherwise."""
    head, body, signature = token.split(".")
    raw = b64url_decode(signature)
    if len(raw) != 64:
        raise ValueError("an ES256 signature is 64 bytes (r and s)")
    der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public_key.verify(der, f"{head}.{body}".encode(), ec.ECDSA(hashes.SHA256()))
    header = json.loads(b64url_decode(head))
    if header.get("alg") != "ES256":
        raise ValueError("alg is not ES256")
    return header, json.loads(b64url_decode(body))


def hkdf(salt, ikm, info, length):
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


def decrypt_aes128gcm(body, ua_private, auth_secret):
    """RFC 8291 and RFC 8188, one record: the plaintext without its delimiter."""
    salt, record_size, id_length = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    server_public = body[21:21 + id_length]
    ciphertext = body[21 + id_length:]
    if record_size < 18 or len(ciphertext) > record_size:
        raise ValueError("bad record size")
    ua_public = ua_private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    shared = ua_private.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), server_public))
    ikm = hkdf(auth_secret, shared, b"WebPush: info\x00" + ua_public + server_public, 32)
    key = hkdf(salt, ikm, b"Content-Encoding: aes128gcm\x00", 16)
    nonce = hkdf(salt, ikm, b"Content-Encoding: nonce\x00", 12)
    plain = AESGCM(key).decrypt(nonce, ciphertext, None).rstrip(b"\x00")
    if not plain.endswith(b"\x02"):
        raise ValueError("the last record's delimiter is not 2")
    return plain[:-1]


class State:
    def __init__(self, args):
        self.args = args
        self.apns_key = None
        if args.apns_key:
            with open(args.apns_key, "rb") as f:
                self.apns_key = serialization.load_pem_private_key(f.read(), password=None).public_key()
        self.ua_private = ec.generate_private_key(ec.SECP256R1())
        self.auth_secret = os.urandom(16)
        self.apns_requests = 0
        self.connections = 0
        self.closed = 0
        os.makedirs(args.dir, exist_ok=True)

    def keep(self, name, record):
        record["http"] = "1.1" if self.args.http1 else "2"
        with open(os.path.join(self.args.dir, name), "a") as f:
            f.write(json.dumps(record) + "\n")

    def apns(self, token, headers, body):
        self.apns_requests += 1
        record = {"kind": "apns", "token": token, "headers": {k: v for k, v in headers.items() if k.startswith("apns-")}}
        try:
            auth = headers.get("authorization", "")
            if not auth.startswith("bearer "):
                raise ValueError("no bearer provider token")
            header, claims = verify_jwt(auth[7:], self.apns_key)
            if header.get("kid") != self.args.apns_kid or claims.get("iss") != self.args.apns_team:
                raise ValueError(f"kid {header.get('kid')} / iss {claims.get('iss')} are not the key's")
            if abs(time.time() - claims.get("iat", 0)) > 3600:
                raise ValueError("iat is over an hour off")
            for name in ("apns-topic", "apns-push-type", "apns-priority", "apns-expiration"):
                if name not in headers:
                    raise ValueError(f"no {name}")
            if self.args.topic and headers["apns-topic"] != self.args.topic:
                return 400, {"reason": "DeviceTokenNotForTopic"}
            payload = json.loads(body)
            if "alert" not in payload.get("aps", {}):
                raise ValueError("no aps.alert")
            record["payload"] = payload
            record["jwt"] = claims
        except Exception as error:  # noqa: BLE001 - any broken rule is answered 403 and kept
            self.keep("errors.jsonl", {"kind": "apns", "token": token, "error": str(error)})
            return 403, {"reason": "InvalidProviderToken"}
        if token in self.args.gone:
            return 410, {"reason": "Unregistered", "timestamp": int(time.time() * 1000)}
        if token in self.args.bad:
            return 400, {"reason": "BadDeviceToken"}
        if self.apns_requests <= self.args.busy_first:
            return 429, {"reason": "TooManyRequests"}
        self.keep("pushes.jsonl", record)
        return 200, None

    def webpush(self, name, headers, body):
        record = {"kind": "webpush", "name": name, "ttl": headers.get("ttl"), "topic": headers.get("topic"),
                  "urgency": headers.get("urgency")}
        try:
            if headers.get("content-encoding") != "aes128gcm":
                raise ValueError("content-encoding is not aes128gcm")
            scheme, _, params = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "vapid":
                raise ValueError("no vapid authorization")
            fields = dict(part.strip().split("=", 1) for part in params.split(","))
            vapid_public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64url_decode(fields["k"]))
            _, claims = verify_jwt(fields["t"], vapid_public)
            if claims.get("aud") != f"https://localhost:{self.args.port}":
                raise ValueError(f"aud {claims.get('aud')} is not this origin")
            if not (time.time() < claims.get("exp", 0) <= time.time() + 86400):
                raise ValueError("exp is not within 24 hours")
            if not str(claims.get("sub", "")).startswith(("mailto:", "https:")):
                raise ValueError("sub is not mailto: or https:")
            record["payload"] = json.loads(decrypt_aes128gcm(body, self.ua_private, self.auth_secret))
            record["vapid"] = {"k": fields["k"], "sub": claims["sub"]}
        except Exception as error:  # noqa: BLE001
            self.keep("errors.jsonl", {"kind": "webpush", "name": name, "error": repr(error)})
            return 400, None
        if name in self.args.webpush_gone:
            return 410, None
        self.keep("pushes.jsonl", record)
        return 201, None


    def route(self, method, path, headers, body):
        """The status and JSON body (bytes) of one request."""
        if method == "POST" and path.startswith("/3/device/"):
            status, reply = self.apns(path[len("/3/device/"):], headers, body)
        elif method == "POST" and path.startswith("/push/"):
            status, reply = self.webpush(path[len("/push/"):], headers, body)
        else:
            status, reply = 404, None
        return status, json.dumps(reply).encode() if reply is not None else b""

    def connected(self):
        self.connections += 1
        with open(os.path.join(self.args.dir, "connections"), "w") as f:
            f.write(str(self.connections))

    def disconnected(self):
        self.closed += 1
        with open(os.path.join(self.args.dir, "closed"), "w") as f:
            f.write(str(self.closed))


class H1Server(asyncio.Protocol):
    """HTTP/1.1 with Content-Length bodies, requests one after another on a connection."""
    def __init__(self, state):
        self.state = state
        self.buffer = bytearray()

    def connection_made(self, transport):
        self.transport = transport
        self.state.connected()

    def connection_lost(self, exc):
        self.state.disconnected()

    def data_received(self, data):
        self.buffer.extend(data)
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            lines = self.buffer[:end].decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            length = int(headers.get("content-length", "0"))
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4:end + 4 + length])
            del self.buffer[:end + 4 + length]
            status, data = self.state.route(method, path, headers, body)
            closing = "connection: close\r\n" if self.state.args.http1_close else ""
            answer = f"HTTP/1.1 {status} -\r\ncontent-length: {len(data)}\r\n{closing}\r\n".encode() + data
            # Answers on a connection keep their order: each waits the same --delay (no jitter here).
            asyncio.get_running_loop().call_later(self.state.args.delay, self.answer, answer, bool(closing))
            if closing:
                return

    def answer(self, data, close):
        if self.transport.is_closing():
            return
        self.transport.write(data)
        if close:
            self.transport.close()


class H2Server(asyncio.Protocol):
    def __init__(self, state):
        self.state = state
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.streams = {}
        self.last = None  # the GOAWAY's last stream id, once sent

    def connection_made(self, transport):
        self.transport = transport
        self.state.connected()
        self.conn.initiate_connection()
        self.transport.write(self.conn.data_to_send())

    def connection_lost(self, exc):
        self.state.disconnected()

    def data_received(self, data):
        try:
            events = self.conn.receive_data(data)
        except Exception:  # noqa: BLE001 - a broken connection ends here
            self.transport.close()
            return
        for event in events:
            if self.last is not None and getattr(event, "stream_id", 0) > self.last:
                continue  # after the GOAWAY's last stream: not taken
            if isinstance(event, h2.events.RequestReceived):
                self.streams[event.stream_id] = (dict(event.headers), bytearray())
                # The client's N-th stream (ids 1, 3, 5, …) is the last this connection takes.
                nth = 2 * self.state.args.goaway_after - 1
                if self.state.args.goaway_after and self.last is None and event.stream_id >= nth:
                    self.go_away(nth)
            elif isinstance(event, h2.events.DataReceived):
                self.streams[event.stream_id][1].extend(event.data)
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                if self.state.args.jitter or self.state.args.delay:
                    # Answers in a random order: pushes sent side by side are taken out of order.
                    wait = self.state.args.delay + random.uniform(0, self.state.args.jitter)
                    asyncio.get_running_loop().call_later(wait, self.answer, event.stream_id)
                else:
                    self.answer(event.stream_id)
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.transport.close()
        self.transport.write(self.conn.data_to_send())

    def answer(self, stream_id):
        if stream_id not in self.streams:
            return
        headers, body = self.streams.pop(stream_id)
        status, data = self.state.route(headers.get(":method"), headers.get(":path", ""), headers, bytes(body))
        response = [(":status", str(status)), ("content-length", str(len(data))), ("apns-id", "stand-in")]
        if status == 429:
            response.append(("retry-after", "0"))
        self.conn.send_headers(stream_id, response, end_stream=not data)
        if data:
            self.conn.send_data(stream_id, data, end_stream=True)
        self.transport.write(self.conn.data_to_send())
        if self.state.args.reset_after_answer:
            # By hand: h2 sends nothing on a stream it saw closed.
            self.transport.write(bytes([0, 0, 4, 3, 0]) + stream_id.to_bytes(4, "big") + bytes(4))

    def go_away(self, last):
        """Streams up to `last` are taken and answered; the ones after it are the client's to
        send again elsewhere. Written by hand: h2's own close_connection() refuses every frame
        after it, where a server going away gracefully still takes the streams up to `last`."""
        self.last = last
        self.transport.write(self.conn.data_to_send())
        self.transport.write(bytes([0, 0, 8, 7, 0, 0, 0, 0, 0]) + last.to_bytes(4, "big") + bytes(4))


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--apns-key")
    parser.add_argument("--apns-kid")
    parser.add_argument("--apns-team")
    parser.add_argument("--topic")
    parser.add_argument("--gone", default="")
    parser.add_argument("--bad", default="")
    parser.add_argument("--busy-first", type=int, default=0)
    parser.add_argument("--webpush-gone", default="")
    parser.add_argument("--goaway-after", type=int, default=0, help="send GOAWAY after answering this many requests on a connection")
    parser.add_argument("--reset-after-answer", action="store_true", help="follow each answer with RST_STREAM (NO_ERROR)")
    parser.add_argument("--http1", action="store_true", help="offer and speak only HTTP/1.1")
    parser.add_argument("--http1-close", action="store_true", help="with --http1, close each connection after its answer")
    parser.add_argument("--jitter", type=float, default=0, help="answer each request after a random wait of up to this many seconds")
    parser.add_argument("--delay", type=float, default=0, help="answer each request this many seconds late")
    args = parser.parse_args()
    for name in ("gone", "bad", "webpush_gone"):
        setattr(args, name, set(filter(None, getattr(args, name).split(","))))
    state = State(args)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["http/1.1"] if args.http1 else ["h2"])
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: (H1Server if args.http1 else H2Server)(state), "127.0.0.1", args.port, ssl=context)
    ua_public = state.ua_private.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    print(f"READY {b64url(ua_public)} {b64url(state.auth_secret)}", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
