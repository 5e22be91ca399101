#!/usr/bin/python3
"""A real SMTP server for the tests (aiosmtpd, Debian's python3-aiosmtpd), with the
faults a relay shows: it keeps every message it accepts as <dir>/<n>.eml (and the
envelope's recipients in <n>.rcpt), prints "READY" once it listens, and stops when
its stdin closes (so it never outlives the test that started it).

  smtp_server.py --port P --dir D [--starttls CERT KEY | --tls CERT KEY]
                 [--auth USER:PASSWORD] [--refuse-first N] [--drop-first N] [--reject]
"""
import argparse
import os
import ssl
import sys
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--dir", required=True)
parser.add_argument("--starttls", nargs=2, metavar=("CERT", "KEY"))
parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
parser.add_argument("--auth")
parser.add_argument("--refuse-first", type=int, default=0, help="answer the first N messages' data with 451")
parser.add_argument("--drop-first", type=int, default=0, help="close the connection after the first N messages' data, unanswered")
parser.add_argument("--reject", action="store_true", help="answer every recipient with 550")
args = parser.parse_args()


class Handler:
    def __init__(self):
        self.seen = 0
        self.kept = 0
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if args.reject:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.seen += 1
            seen = self.seen
        if seen <= args.refuse_first:
            return "451 4.3.0 try again later"
        if seen <= args.refuse_first + args.drop_first:
            # The whole message arrived; the connection ends before it is answered.
            server.transport.close()
            return "421 4.3.0 gone"
        with self.lock:
            self.kept += 1
            name = os.path.join(args.dir, str(self.kept))
        with open(name + ".rcpt", "w") as f:
            f.write("\n".join(envelope.rcpt_tos))
        with open(name + ".eml.partial", "wb") as f:
            f.write(envelope.original_content or envelope.content)
        os.rename(name + ".eml.partial", name + ".eml")
        return "250 OK kept"


def authenticator(server, session, envelope, mechanism, auth_data):
    if not isinstance(auth_data, LoginPassword):
        return AuthResult(success=False, handled=False)
    user, password = args.auth.split(":", 1)
    ok = auth_data.login.decode() == user and auth_data.password.decode() == password
    return AuthResult(success=ok, handled=False)


def context(pair):
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pair[0], pair[1])
    return ctx


os.makedirs(args.dir, exist_ok=True)
options = {"enable_SMTPUTF8": True}
if args.starttls:
    options.update(tls_context=context(args.starttls), require_starttls=True)
if args.auth:
    options.update(authenticator=authenticator, auth_required=True, auth_require_tls=bool(args.starttls))
controller = Controller(Handler(), hostname="127.0.0.1", port=args.port,
                        ssl_context=context(args.tls) if args.tls else None,
                        server_hostname="localhost" if args.tls else None, **options)
controller.start()
print("READY", flush=True)
sys.stdin.read()
controller.stop()
