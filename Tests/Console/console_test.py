"""The console in a real browser: Debian's chromium driven by Playwright, against a
live stack (`here up --demo`) started for the run.

What a person trying Hereabouts does, on a desktop's screen and a phone's: sign in,
search "burger" near Utrecht and see the pin and the row with its open status, open
the post and save it, post a bike with a photo and see it appear in a search left
open (no reload), send a chat message and see it arrive in a second browser, let that
browser notify of messages (Web Push through the stack's push stand-in), switch
to German (labels and data), and visit every page; confirm a new account's address
from the link it was mailed, and get back in with a forgotten password's link (the
stack mails a real SMTP server the test runs); an operator sees the stack's state. Any error in a browser's console, on any page, fails the run.

    python console_test.py --bin .build/debug [--screenshots Docs/screenshots]

With --screenshots, the main pages at phone and desktop sizes are saved there.
"""
import argparse
import json
import email
import email.policy
import glob
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zlib
import struct

from playwright.sync_api import sync_playwright, expect

# A debug build's sign-in (scrypt unoptimised) alone can take seconds.
expect.set_options(timeout=30_000)

PASSWORD = "hereabouts-demo"
DESKTOP = {"viewport": {"width": 1280, "height": 860}}
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
# Tiles come from the network, which a test machine may not have: every tile is
# answered with one blank PNG, so the map draws as it would offline, without errors.
BLANK_PNG = None


def png(width, height, rgb):
    """A plain PNG of one colour: the photo a test uploads, and the blank tile."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


HANDED_OUT = set()


def free_port():
    """A port nothing listens on, from 12000-19999: below the kernel's ephemeral range,
    where any outgoing connection could take a port the kernel handed out before the
    service it was meant for binds it (and apart from the Swift tests' 20000-31999).
    Never one handed out before: a stack's dozen ports are all chosen before the first
    is bound, and the edge's, chosen first and bound last, could go to a service too
    (the edge then exits at once, again and again: what CI once saw, cause unrecorded)."""
    while True:
        port = random.randint(12000, 19999)
        if port in HANDED_OUT:
            continue
        HANDED_OUT.add(port)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


class Stack:
    """`here up --demo` in a fresh data directory, the edge on a free port."""

    def __init__(self, bin_dir, relay=True):
        self.directory = tempfile.mkdtemp(prefix="hb-console-")
        self.port = free_port()
        environment = dict(os.environ)
        self.relay = None
        if relay:
            # A real SMTP server for the stack's mail (Debian's aiosmtpd; the tests' own script):
            # what it accepts is kept as files in mail_dir.
            self.mail_dir = os.path.join(self.directory, "relay")
            relay_port = free_port()
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Shared", "ServiceKitTesting", "smtp_server.py")
            self.relay = subprocess.Popen(["/usr/bin/python3", script, "--port", str(relay_port), "--dir", self.mail_dir],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            if not self.relay.stdout.readline().startswith("READY"):
                raise SystemExit("the test SMTP server did not start (python3-aiosmtpd)")
            environment["HEREABOUTS_SMTP_URL"] = f"smtp://127.0.0.1:{relay_port}?starttls=off"
        else:
            environment.pop("HEREABOUTS_SMTP_URL", None)
        self.push = None
        if relay:
            # A Web Push service stand-in (HTTP/2 over TLS; the tests' own script) that checks
            # each push's VAPID token and decrypts it; what it takes is kept in push_dir.
            self.push_dir = os.path.join(self.directory, "push")
            os.makedirs(self.push_dir)
            cert, key = os.path.join(self.push_dir, "cert.pem"), os.path.join(self.push_dir, "key.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
            self.push_port = free_port()
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Shared", "ServiceKitTesting", "push_server.py")
            self.push = subprocess.Popen(["/usr/bin/python3", script, "--port", str(self.push_port), "--dir", os.path.join(self.push_dir, "kept"),
                                          "--cert", cert, "--key", key], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            ready = self.push.stdout.readline().split()
            if len(ready) != 3 or ready[0] != "READY":
                raise SystemExit("the push stand-in did not start (python3-h2, python3-cryptography)")
            self.push_keys = {"p256dh": ready[1], "auth": ready[2]}
            environment.update(HEREABOUTS_PUSH_CA_FILE=cert, HEREABOUTS_WEBPUSH_HOSTS="localhost")
        environment.update(HEREABOUTS_BIN_DIR=bin_dir, HEREABOUTS_LOG_LEVEL="warning",
                           XDG_CONFIG_HOME=os.path.join(self.directory, "config"),
                           HEREABOUTS_EDGE_RATE_LIMIT="0", HEREABOUTS_EDGE_SERVICE_TIMEOUT="60",
                           # password hashes at scrypt's lowest cost, as in the Swift tests' stacks (~3 ms, not ~0.35 s)
                           HEREABOUTS_AUTH_PASSWORD_COST="10")
        environment.pop("HEREABOUTS_EDGE_OPERATORS", None)
        for service in ("auth", "catalogue", "geo", "favourites", "chat"):
            environment[f"HEREABOUTS_{service.upper()}_ENDPOINT"] = f"tcp://127.0.0.1:{free_port()}"
            environment[f"HEREABOUTS_{service.upper()}_EVENTS"] = f"tcp://127.0.0.1:{free_port()}"
        self.log = open(os.path.join(self.directory, "up.log"), "w+")
        self.process = subprocess.Popen(
            [os.path.join(bin_dir, "here"), "up", "--demo", "--data", os.path.join(self.directory, "data"),
             "--http", f"127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT, env=environment, start_new_session=True)
        deadline = time.time() + 240
        while time.time() < deadline:
            text = self.text()
            if "demo data:" in text and "apps and browsers:" in text:
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        text = self.text()
        self.stop()
        raise SystemExit(f"the stack did not start:\n{text}")

    def text(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def pushes(self):
        """The pushes the stand-in took, decrypted."""
        try:
            with open(os.path.join(self.push_dir, "kept", "pushes.jsonl")) as f:
                return [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []

    def stop(self):
        for server in (self.relay, self.push):
            if server and server.poll() is None:
                server.stdin.close()
                server.wait(10)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        shutil.rmtree(self.directory, ignore_errors=True)


class Browser:
    """Contexts of one chromium, each page's console errors collected."""

    def __init__(self, playwright, base_url):
        self.browser = playwright.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                                  args=["--no-sandbox"])
        self.base_url = base_url
        self.errors = []

    def context(self, size, language="en-GB", base_url=None):
        context = self.browser.new_context(base_url=base_url or self.base_url, locale=language, **size)
        context.route(re.compile(r"^https://tile\.openstreetmap\.org/"),
                      lambda route: route.fulfill(status=200, content_type="image/png", body=BLANK_PNG))
        context.set_default_timeout(30_000)
        context.on("page", self.watch)
        return context

    # Chromium logs every 4xx answer as a console error; the steps that provoke one (a
    # wrong password, a radius of 0) check what the page says about it instead.
    ANSWERED = re.compile(r"^Failed to load resource: the server responded with a status of 4\d\d ")

    def watch(self, page):
        page.on("console", lambda message: message.type == "error" and not self.ANSWERED.match(message.text)
                and self.errors.append(f"{page.url}: {message.text}"))
        page.on("pageerror", lambda error: self.errors.append(f"{page.url}: {error}"))

    def close(self):
        self.browser.close()


def open_sign_in(page):
    """The signed-out header's form; on a phone it waits behind "Sign in or register"."""
    header = page.locator("#account")
    closed = header.locator("details.signin-box:not([open]) > summary")
    if closed.count():
        closed.click()
    return header


def sign_in(page, email):
    page.goto("/#/search")
    header = open_sign_in(page)
    header.get_by_label("Email").fill(email)
    header.get_by_label("Password").fill(PASSWORD)
    header.get_by_role("button", name="Sign in").click()
    expect(header).to_contain_text("Signed in as")


def search(page, words, place="Utrecht"):
    page.goto("/#/search")
    form = page.get_by_role("search")
    form.get_by_label("Words", exact=True).fill(words)
    form.get_by_label("Near", exact=True).fill(place)
    form.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator(".status")).to_contain_text("found near")


def offer_form(page, title, lat, lon):
    """The posting page's form, filled in for an offer titled `title` at `lat`, `lon`."""
    page.goto("/#/edit")
    form = page.locator("form.post-form")
    form.get_by_label("Kind").select_option("offer")
    form.get_by_label("Title").fill(title)
    form.get_by_label("Latitude").fill(lat)
    form.get_by_label("Longitude").fill(lon)
    return form


def mailed_link(mail_dir, address, path, seen):
    """The link with `path` in the newest message to `address` the relay kept, not in `seen`."""
    deadline = time.time() + 30
    while time.time() < deadline:
        for name in sorted(glob.glob(os.path.join(mail_dir, "*.eml")), key=os.path.getmtime, reverse=True):
            with open(name) as f:
                message = email.message_from_file(f, policy=email.policy.default)
            if message["To"] != address:
                continue
            text = message.get_body(preferencelist=("plain",)).get_content()
            match = re.search(r"https?://\S+" + re.escape(path) + r"\?token=[A-Za-z0-9_-]+", text)
            if match and match.group(0) not in seen:
                seen.add(match.group(0))
                return match.group(0)
        time.sleep(0.1)
    raise AssertionError(f"no mail to {address} with a {path} link in {mail_dir}")


AXE = None


def audit(page, where):
    """axe-core's rules over the page as it is shown; what it finds serious or critical is
    returned as lines (the minor and moderate ones are counted, not failed)."""
    global AXE
    if AXE is None:
        from axe_playwright_python.sync_playwright import Axe
        AXE = Axe()
    violations = AXE.run(page).response["violations"]
    bad = [v for v in violations if v.get("impact") in ("serious", "critical")]
    print(f"  axe {where}: {len(bad)} serious or critical, {len(violations) - len(bad)} minor or moderate")
    return [f"{where}: {v['id']} ({v['impact']}) {v['help']}: {[n['target'] for n in v['nodes']][:4]}" for v in bad]


def audit_pages(page, pages, language):
    """Each page (an address and what shows it is drawn) audited in `language`."""
    found = []
    page.goto("/#/search")
    page.locator("#account select").select_option(language)
    for address, ready in pages:
        page.goto(address)
        expect(page.locator(ready).first).to_be_visible()
        page.wait_for_timeout(300)  # late parts: the map's tiles, a list's second answer
        found += audit(page, f"{address} ({language})")
    return found


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"{name}: {detail}")
    print(f"  ok  {name}")


def flows(browser, size_name, size, screenshots, stack):
    mail_dir = stack.mail_dir
    """The whole walk on one screen size."""
    def shot(page, name):
        if screenshots:
            page.wait_for_timeout(300)
            page.screenshot(path=os.path.join(screenshots, f"{name}-{size_name}.png"), full_page=False)

    print(f"{size_name}:")
    # A guest (a search made the session): signing in stays in reach, Favourites asks to sign in.
    guest_context = browser.context(size)
    guest = guest_context.new_page()
    search(guest, "burger")
    expect(guest.locator("#account")).to_contain_text("Signed in as a guest")
    guest.goto("/#/favourites")
    expect(guest.locator("ul.cards li.empty")).to_contain_text("sign in or register")
    guest.locator("#account").get_by_role("button", name="Sign in or register").click()
    expect(guest.locator("#account").get_by_label("Email")).to_be_visible()  # asked for: open on a phone too
    guest_context.close()

    ann_context = browser.context(size)
    ann = ann_context.new_page()
    # A wrong password is said in the sign-in form's words (its field is Email), not the API's.
    ann.goto("/#/search")
    expect(ann.get_by_role("search")).to_have_count(1)
    search_top = ann.evaluate("document.querySelector('form[role=search]').getBoundingClientRect().top")
    # The signed-out pages pass axe-core's audit too, with the sign-in form shown.
    signed_out = [("/#/search", "form[role=search]"), ("/#/trips", "#page h2"), ("/#/account", "#page h2")]
    failures = audit_pages(ann, signed_out, "de") + audit_pages(ann, signed_out, "en")
    header = open_sign_in(ann)
    failures += audit(ann, "the sign-in form, open (en)")
    check("axe-core finds no serious or critical violation signed out", not failures, "\n".join(failures))
    header.get_by_label("Email").fill("ann@demo.hereabouts")
    header.get_by_label("Password").fill("not-the-password")
    header.get_by_role("button", name="Sign in").click()
    expect(ann.locator("#notice")).to_contain_text("No account matches that email and password")
    # Register with the form left empty sends nothing: the browser says what is missing.
    header.get_by_label("Email").fill("")
    header.get_by_label("Password").fill("")
    before = ann.locator("#notice").inner_text()
    header.get_by_role("button", name="Register").click()
    ann.wait_for_timeout(700)  # long enough for a request's answer to show, had one been sent
    check("an empty Register form is not sent", ann.locator("#notice").inner_text() == before, ann.locator("#notice").inner_text())
    sign_in(ann, "ann@demo.hereabouts")
    if size["viewport"]["width"] < 800:
        # Signed out on a phone the sign-in form is one line until asked for: Search starts about
        # where it does for someone signed in (the open form pushed it 340 px further down).
        signed_in_top = ann.evaluate("document.querySelector('form[role=search]').getBoundingClientRect().top")
        check("signed out on a phone, Search is not pushed down by the sign-in form", search_top - signed_in_top < 60,
              f"{search_top:.0f} px signed out, {signed_in_top:.0f} px signed in")

    # Search "burger" near Utrecht: a pin and a row with its open status.
    search(ann, "burger")
    row = ann.locator("ol.hits li", has_text="Burger Bar")
    expect(row).to_have_count(1)
    expect(row.locator("mark")).to_have_text("Burger")
    status = row.locator(".open-status")
    expect(status).to_have_count(1)
    check("the row shows an open status", status.get_attribute("class").split()[-1] in
          {"open", "closes_soon", "closed", "opens_soon"}, status.get_attribute("class"))
    check("a pin is on the map", ann.locator(".map path.leaflet-interactive").count() >= 1)
    if size["viewport"]["width"] < 800:
        check("on a phone the results come before the map", ann.evaluate(
            "document.querySelector('ol.hits').getBoundingClientRect().top < document.querySelector('.results .map').getBoundingClientRect().top"))
    # The navigation leaves the focus on the page it leads to.
    ann.get_by_role("navigation").get_by_role("link", name="Favourites").click()
    expect(ann.get_by_role("heading", level=2)).to_have_text("Favourites")
    expect(ann.locator("#page")).to_be_focused()  # the focus is on the page after the navigation
    ann.go_back()
    expect(ann.locator("ol.hits li", has_text="Burger Bar")).to_have_count(1)
    shot(ann, "search")
    # A search's mistakes are said in the form's words: km, not metres; "Near", not lat and lon.
    ann.goto("/#/search?place=Utrecht&radius=0")
    expect(ann.locator("#notice")).to_contain_text("Choose a radius between 0.1 and 500 km")
    ann.goto("/#/search?q=burger&place=")
    expect(ann.locator("#notice")).to_contain_text("Say where: a place by its name")
    search(ann, "'\"%;--")
    expect(ann.locator("#notice")).to_contain_text("has no words to look for")

    # The post: saved, and then among the favourites.
    row.get_by_role("link").click()
    expect(ann.get_by_role("heading", level=2)).to_have_text("Burger Bar")
    expect(ann.locator(".hours")).to_contain_text("Mo-Th 11:00-22:00")
    save = ann.locator(".post .actions button[aria-pressed]")
    if save.get_attribute("aria-pressed") == "true":  # saved in the run at the other size: taken back first
        save.click()
        expect(save).to_have_attribute("aria-pressed", "false")
    save.click()
    expect(save).to_have_attribute("aria-pressed", "true")
    expect(save).to_have_text("Saved ✓")
    # A link styled as a button is as tall as a button, its text centred; the map keeps its distance.
    message_link = ann.locator(".provider a.button")
    heights = ann.evaluate("""[document.querySelector('.provider a.button'), document.querySelector('.post .actions button')]
        .map(e => Math.round(e.getBoundingClientRect().height))""")
    check("'Send a message' is as tall as the other buttons", abs(heights[0] - heights[1]) <= 1, str(heights))
    gap = ann.evaluate("document.querySelector('.post .map').getBoundingClientRect().top - document.querySelector('.provider a.button').getBoundingClientRect().bottom")
    check("'Send a message' does not touch the map", gap >= 8, f"{gap} px")
    expect(message_link).to_have_count(1)
    # Rating: the chosen stars say they are chosen.
    four = ann.get_by_role("button", name="4 of 5 stars")
    four.click()
    expect(ann.locator("#notice")).to_contain_text("You gave it 4 of 5")
    expect(four).to_have_attribute("aria-pressed", "true")
    expect(ann.get_by_role("button", name="5 of 5 stars")).to_have_attribute("aria-pressed", "false")
    shot(ann, "post")
    ann.goto("/#/favourites")
    expect(ann.locator("ul.cards li", has_text="Burger Bar")).to_have_count(1)
    shot(ann, "favourites")

    # A search left open, and a new post with a photo from another tab: it appears.
    title = f"Folding bike {size_name}"
    search(ann, "folding bike")
    expect(ann.locator("main[data-live=open]")).to_have_count(1)
    poster = ann_context.new_page()
    # A title past 200 characters is not cut without a word: the count says so and the form holds it back.
    long_form = offer_form(poster, "x" * 230, "52.0915", "5.1180")
    expect(long_form.locator("small.hint").first).to_have_text("230 of 200 characters")
    check("a title past 200 characters is held back", poster.evaluate("document.querySelector('form.post-form input[name=title]').matches(':invalid')"))
    form = offer_form(poster, title, "52.0915", "5.1180")
    form.get_by_label("Description").fill("Light, folds small, serviced.")
    form.get_by_label("Price").fill("180")
    form.get_by_label("Opening hours").fill("Mo-Sa 10:00-18:00")
    form.get_by_label("Add photos").set_input_files(files=[{"name": "bike.png", "mimeType": "image/png", "buffer": png(64, 48, (40, 110, 150))}])
    shot(poster, "edit")
    ann.evaluate("window.stillThisPage = true")
    form.get_by_role("button", name="Publish").click()
    expect(poster.get_by_role("heading", level=2)).to_have_text(title)
    photo = poster.locator(".photos img")
    expect(photo).to_have_count(1)
    check("the photo has a text alternative", photo.get_attribute("alt") == f"Photo 1 of {title}", photo.get_attribute("alt"))
    expect(ann.locator("ol.hits li", has_text=title)).to_have_count(1)
    check("the open search showed the new post without a reload", ann.evaluate("window.stillThisPage === true"))
    expect(ann.locator(".live")).to_contain_text(title)
    # The count above the list follows the live list.
    rows = ann.locator("ol.hits li:not(.empty)").count()
    expect(ann.locator(".status")).to_contain_text(f"{rows} found near")
    check("the live list grew the count", rows >= 1, str(rows))

    # A title with markup is text wherever it is shown, the map's tooltip too (Leaflet writes strings as HTML).
    markup = f'Zebralamp {size_name} <img src=x onerror="document.body.dataset.injected=1"><b>bold</b>'
    offer_form(poster, markup, "52.0921", "5.1190").get_by_role("button", name="Publish").click()
    expect(poster.get_by_role("heading", level=2)).to_have_text(markup)
    search(ann, f"zebralamp {size_name}")
    expect(ann.locator("ol.hits li", has_text="Zebralamp")).to_have_count(1)
    ann.locator(".map path.leaflet-interactive").first.hover()
    tooltip = ann.locator(".leaflet-tooltip")
    expect(tooltip).to_have_text(markup)
    check("a tooltip shows a title's markup as text", tooltip.locator("img, b").count() == 0,
          tooltip.inner_html())
    check("no markup from a title ran", ann.evaluate("document.body.dataset.injected") is None)
    poster.close()

    # Chat: Bob, in another browser, sees Ann's messages arrive.
    bob_context = browser.context(size)
    bob = bob_context.new_page()
    sign_in(bob, "bob@demo.hereabouts")
    ann.goto("/#/chat/new")
    ann.get_by_label("To (their email address)").fill("bob@demo.hereabouts")
    ann.get_by_label("Message", exact=True).fill(f"Dive on Saturday? ({size_name})")
    ann.get_by_role("button", name="Send", exact=True).click()
    expect(ann.locator(".messages li", has_text=f"Dive on Saturday? ({size_name})")).to_have_count(1)
    expect(ann.get_by_label("Message", exact=True)).to_be_focused()  # after the first message, back in its field
    bob.goto("/#/chat")
    bob.locator(".conversations a", has_text="Ann").first.click()
    expect(bob.locator(".messages li", has_text=f"Dive on Saturday? ({size_name})")).to_have_count(1)
    # Opened, it is read: no unread badge stays beside Ann's name.
    expect(bob.locator(".conversations a", has_text="Ann").first.locator(".badge")).to_have_count(0)
    expect(bob.locator("html[data-live=ready]")).to_have_count(1)
    bob.evaluate("window.stillThisPage = true")
    ann.get_by_label("Message", exact=True).fill(f"Twelve o'clock at the harbour ({size_name})")
    ann.get_by_role("button", name="Send", exact=True).click()
    expect(bob.locator(".messages li", has_text=f"Twelve o'clock at the harbour ({size_name})")).to_have_count(1)
    check("a message arrived in the second browser without a reload", bob.evaluate("window.stillThisPage === true"))
    shot(bob, "chat")
    # Heard on another page too: a badge on the Chat link, and a notice naming the sender.
    bob.goto("/#/favourites")
    expect(bob.locator("html[data-live=ready]")).to_have_count(1)
    ann.get_by_label("Message", exact=True).fill(f"Bring fins ({size_name})")
    ann.get_by_role("button", name="Send", exact=True).click()
    expect(bob.get_by_role("navigation").locator("a[href='#/chat'] .badge")).to_have_text("1")
    expect(bob.locator("#notice")).to_contain_text("A new message from Ann")

    # Pushes: Bob lets this browser notify him. No browser push service is reachable here,
    # so the browser's subscribe() hands over one at the stack's push stand-in (with its keys);
    # the console registers it, and Ann's next message reaches the stand-in as a Web Push it
    # decrypts with those keys, signed with the VAPID key the console subscribed with.
    endpoint = f"https://localhost:{stack.push_port}/push/bob-{size_name}"
    bob_context.grant_permissions(["notifications"])
    bob_context.add_init_script("""(() => {
      const subscription = { endpoint: %s, options: {}, unsubscribe: async () => true,
        toJSON() { return { endpoint: this.endpoint, expirationTime: null, keys: %s }; } };
      let subscribed = null;
      PushManager.prototype.subscribe = async function (options) { window.pushOptions = options; subscribed = subscription; return subscription; };
      PushManager.prototype.getSubscription = async function () { return subscribed; };
    })();""" % (json.dumps(endpoint), json.dumps(stack.push_keys)))
    bob.goto("/#/chat")
    bob.reload()
    bob.get_by_role("button", name="Notify me in this browser").click()
    expect(bob.locator("p.notify")).to_contain_text("New messages show in this browser as notifications")
    vapid = bob.evaluate("fetch('/v1/push/vapid-key').then((r) => r.json()).then((k) => k.publicKey)")
    sent_key = bob.evaluate("btoa(String.fromCharCode(...window.pushOptions.applicationServerKey)).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '')")
    check("the console subscribed with the server's VAPID key", sent_key == vapid, f"{sent_key} != {vapid}")
    check("the service worker is registered", bob.evaluate("navigator.serviceWorker.getRegistration('/console/').then((r) => Boolean(r && r.active))"))
    ann.get_by_label("Message", exact=True).fill(f"Bring a torch ({size_name})")
    ann.get_by_role("button", name="Send", exact=True).click()
    deadline = time.time() + 30
    while time.time() < deadline and not any(p.get("name") == f"bob-{size_name}" for p in stack.pushes()):
        time.sleep(0.2)
    pushed = [p for p in stack.pushes() if p.get("name") == f"bob-{size_name}"]
    check("Ann's message reached Bob's browser as a Web Push", len(pushed) == 1 and pushed[0]["payload"]["body"] == f"Bring a torch ({size_name})"
          and pushed[0]["payload"]["title"] == "Ann" and pushed[0]["vapid"]["k"] == vapid, json.dumps(pushed))
    bob_context.close()

    # The other pages, each drawn without an error.
    ann.goto("/#/divers")
    expect(ann.locator("ol.hits li", has_text="Bob")).to_have_count(1)
    expect(ann.locator(".status")).to_contain_text(re.compile(r"1 diver near (Vlissingen|Flushing)"))  # the count names the place
    expect(ann.locator("ol.hits li", has_text="Bob")).to_contain_text("Certification: OWD")  # attributes labelled
    shot(ann, "divers")
    ann.goto("/#/trips")
    trip_form = ann.get_by_role("form", name="A new trip")
    trip_form.get_by_label("Title").fill(f"Köln weekend ({size_name})")
    trip_form.get_by_label("City").fill("Köln")
    trip_form.get_by_label("Country code").fill("DE")
    trip_form.get_by_label("From").fill("2027-05-01")
    trip_form.get_by_label("Until").fill("2027-05-03")
    trip_form.get_by_role("button", name="Create the trip").click()
    expect(ann.get_by_role("heading", level=3)).to_have_text(f"Köln weekend ({size_name})")
    ann.get_by_label("A buddy's email address").fill("bob@demo.hereabouts")
    ann.get_by_role("button", name="Invite", exact=True).click()
    expect(ann.locator(".members li")).to_have_count(2)
    # Invited is not joined: Bob is on the trip only once he accepts it.
    expect(ann.locator(".members li", has_text="Bob")).to_contain_text("invited, has not answered yet")
    expect(ann.locator(".members li", has_text="Bob")).not_to_contain_text("joined")
    bob_context = browser.context(size)
    bob = bob_context.new_page()
    sign_in(bob, "bob@demo.hereabouts")
    bob.goto("/#/trips")
    expect(bob.locator(".cards li", has_text=f"Köln weekend ({size_name})")).to_contain_text("Invitation")
    bob.locator(".cards a", has_text=f"Köln weekend ({size_name})").click()
    expect(bob.locator(".invitation")).to_contain_text("Ann invited you")
    bob.get_by_role("button", name="Join the trip").click()
    expect(bob.locator(".members li", has_text="Bob")).to_contain_text("joined")
    expect(bob.get_by_role("button", name="Join the trip")).to_have_count(0)
    bob_context.close()
    ann.goto("/#/trips")
    ann.locator(".cards a", has_text=f"Köln weekend ({size_name})").click()
    expect(ann.locator(".members li", has_text="Bob")).to_contain_text("joined")
    with ann.expect_download() as download:
        ann.get_by_role("button", name="Calendar file (.ics)").click()
    calendar = open(download.value.path()).read()
    check("the calendar file is an iCalendar event", "BEGIN:VEVENT" in calendar and "Köln weekend" in calendar, calendar[:200])
    shot(ann, "trip")
    ann.goto("/#/tips")
    expect(ann.locator(".groups h3")).to_have_count(2)
    expect(ann.locator(".groups", has_text="Café Reichard")).to_have_count(1)
    shot(ann, "tips")
    ann.goto("/#/sights")
    expect(ann.locator("ol.hits li", has_text="Dom Tower")).to_have_count(1)
    ann.locator("ol.hits li", has_text="Dom Tower").get_by_role("button", name="Walk there").click()
    expect(ann.locator(".log li.entered", has_text="Dom Tower")).to_have_count(1)
    ann.locator("ol.hits li", has_text="Rietveld").get_by_role("button", name="Walk there").click()
    expect(ann.locator(".log li.exited", has_text="Dom Tower")).to_have_count(1)
    entered = ann.locator(".log li.entered", has_text="Dom Tower").count()
    check("walking into and out of a fence is shown once each", entered == 1, f"{entered} entries")
    shot(ann, "sights")
    ann.goto("/#/country/NL")
    expect(ann.locator(".country h3")).to_have_text("Netherlands")
    check("the flag has a text alternative", ann.locator(".flag").get_attribute("aria-label") == "The flag of Netherlands")
    shot(ann, "country")

    # German: the labels, and the data where the gazetteer has it.
    ann.get_by_label("Language").select_option("de")
    expect(ann.get_by_role("navigation").get_by_role("link", name="Suche")).to_have_count(1)
    expect(ann.locator(".country h3")).to_have_text("Niederlande")
    expect(ann.locator(".country dd").nth(3)).to_contain_text("Euro")
    ann.goto("/#/search?q=burger&place=Utrecht")
    expect(ann.locator(".status")).to_contain_text("gefunden bei")
    expect(ann.get_by_label("Wörter")).to_have_value("burger")
    shot(ann, "search-de")
    # Mistakes in German too, none of the API's English.
    ann.goto("/#/search?place=Utrecht&radius=0")
    expect(ann.locator("#notice")).to_contain_text("Bitte einen Umkreis zwischen 0,1 und 500 km wählen")
    ann.goto("/#/search?q=burger&place=Xyzzyqwv")
    expect(ann.locator("#notice")).to_contain_text("Ort")
    check("a German page's error has no English detail", "no place" not in ann.locator("#notice").inner_text(),
          ann.locator("#notice").inner_text())
    ann.get_by_label("Sprache").select_option("en")

    # Keyboard: the skip link is the first stop, and leads into the page.
    ann.goto("/#/search")
    ann.reload()
    expect(ann.get_by_role("search")).to_have_count(1)
    ann.keyboard.press("Tab")
    check("the first Tab reaches the skip link", ann.evaluate("document.activeElement.className") == "skip")
    ann.keyboard.press("Enter")
    check("the skip link moves the focus to the page", ann.evaluate("document.activeElement.id") == "page")
    unnamed = ann.evaluate("""[...document.querySelectorAll('img')].filter(i => !i.hasAttribute('alt')).length""")
    check("every image has a text alternative", unnamed == 0, f"{unnamed} without")
    # The operators' page: to anyone else it says so in words, not the edge's setting.
    ann.goto("/#/operator")
    expect(ann.locator("#notice")).to_contain_text("for the people who run this Hereabouts")
    check("no setting name shown", "HEREABOUTS_" not in ann.locator("#notice").inner_text(), ann.locator("#notice").inner_text())

    # axe-core over every page, in both languages: nothing serious or critical.
    search(ann, "burger")
    post_address = "/" + ann.locator("ol.hits li a.title").first.get_attribute("href")
    ann.goto("/#/trips")
    trip_address = "/" + ann.locator(".cards a", has_text=f"Köln weekend ({size_name})").get_attribute("href")
    ann.goto("/#/chat")
    chat_address = "/" + ann.locator(".conversations a", has_text="Bob").first.get_attribute("href")
    pages = [("/#/search?q=burger&place=Utrecht", "ol.hits li"), (post_address, "#page h2"), ("/#/edit", "form"),
             ("/#/favourites", "ul.cards li"), ("/#/chat", ".conversations a"), (chat_address, ".messages li"),
             ("/#/divers", "ol.hits li"), ("/#/trips", ".cards li"), (trip_address, ".members li"), ("/#/tips", ".groups h3"),
             ("/#/sights", "ol.hits li"), ("/#/country/NL", ".country h3"), ("/#/account", "#page h2"), ("/#/operator", "#page h2")]
    failures = audit_pages(ann, pages, "de") + audit_pages(ann, pages, "en")
    check("axe-core finds no serious or critical violation on any page in either language", not failures, "\n".join(failures))
    ann_context.close()

    # A new account confirms its address from the mailed link; later, a forgotten password.
    address = f"newcomer-{size_name}@example.org"
    seen = set()
    mail_context = browser.context(size)
    newcomer = mail_context.new_page()
    newcomer.goto("/#/search")
    header = open_sign_in(newcomer)
    header.get_by_label("Email").fill(address)
    header.get_by_label("Password").fill(PASSWORD)
    header.get_by_role("button", name="Register").click()
    expect(header).to_contain_text("Signed in as")
    header.get_by_role("link", name=re.compile("Signed in as")).click()
    expect(newcomer.locator("#page")).to_contain_text("not confirmed yet")
    link = mailed_link(mail_dir, address, "/email/verify", seen)
    newcomer.goto(link)
    expect(newcomer.locator("#page")).to_contain_text(f"{address} is confirmed")
    check("the token leaves the address bar", "token" not in newcomer.url, newcomer.url)
    expect(newcomer.locator("#page .badge")).to_have_text("confirmed")
    shot(newcomer, "account")
    header.get_by_role("button", name="Sign out").click()
    open_sign_in(newcomer).get_by_role("link", name="Forgot your password?").click()
    form = newcomer.get_by_role("form", name="Forgot your password?")
    form.get_by_label("Email").fill(address)
    form.get_by_role("button", name="Send the link").click()
    expect(newcomer.locator("#notice")).to_contain_text(f"If an account has {address}")
    newcomer.goto(mailed_link(mail_dir, address, "/password/reset", seen))
    reset = newcomer.get_by_role("form", name="A new password")
    reset.get_by_label("New password").fill(PASSWORD + "-2")
    reset.get_by_role("button", name="Set the password").click()
    expect(newcomer.locator("#notice")).to_contain_text("Your password is set")
    expect(newcomer.locator("#page .badge")).to_have_text("confirmed")
    # A new address: it changes once the link mailed to it is opened.
    moved = f"moved-{size_name}@example.org"
    change = newcomer.get_by_role("form", name="A new address")
    change.get_by_label("New email address").fill(moved)
    change.get_by_label("Password").fill(PASSWORD + "-2")
    change.get_by_role("button", name="Change the address").click()
    expect(newcomer.locator("#notice")).to_contain_text(f"A link is on its way to {moved}")
    expect(newcomer.locator("#page")).to_contain_text(f"Waiting for confirmation: {moved}")
    newcomer.goto(mailed_link(mail_dir, moved, "/email/verify", seen))
    expect(newcomer.locator("#page")).to_contain_text(f"{moved} is confirmed")
    expect(newcomer.locator("#page")).to_contain_text(f"Your address: {moved}")
    expect(header).to_contain_text("Signed in as")
    mail_context.close()

    # The operators' page, for the demo's operator only.
    operator_context = browser.context(size)
    operator = operator_context.new_page()
    sign_in(operator, "operator@demo.hereabouts")
    operator.get_by_role("navigation").get_by_role("link", name="Operators").click()
    expect(operator.locator("tr[data-service]")).to_have_count(5)
    expect(operator.locator("tr[data-service].ok")).to_have_count(5)
    posts = int(re.sub(r"\D", "", operator.locator("[data-geo=posts]").inner_text()))
    check("geo's posts are counted", posts >= 9, str(posts))
    shot(operator, "operator")
    operator_context.close()


def development_mail(browser, bin_dir):
    """A demo stack keeps its mail: the console offers the link of a mail in its notice."""
    print("development stack:")
    stack = Stack(bin_dir, relay=False)
    try:
        context = browser.context(DESKTOP, base_url=stack.url)
        page = context.new_page()
        page.goto("/#/search")
        header = page.locator("#account")
        header.get_by_label("Email").fill("dev@example.org")
        header.get_by_label("Password").fill(PASSWORD)
        header.get_by_role("button", name="Register").click()
        expect(header).to_contain_text("Signed in as")
        expect(page.locator("#notice")).to_contain_text("no mail leaves")
        page.locator("#notice").get_by_role("link", name="open its link").click()
        expect(page.locator("#page")).to_contain_text("dev@example.org is confirmed")
        check("a development stack offers the mail's link, and it confirms", True)
        context.close()
    except Exception:
        print(stack.text()[-3000:], file=sys.stderr)
        raise
    finally:
        stack.stop()


def main():
    global BLANK_PNG
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True, help="where here and the services are built")
    parser.add_argument("--screenshots", help="a directory for screenshots of the main pages")
    arguments = parser.parse_args()
    if arguments.screenshots:
        os.makedirs(arguments.screenshots, exist_ok=True)
    BLANK_PNG = png(256, 256, (232, 238, 242))
    stack = Stack(os.path.abspath(arguments.bin))
    try:
        with sync_playwright() as playwright:
            browser = Browser(playwright, stack.url)
            try:
                for size_name, size in (("desktop", DESKTOP), ("phone", PHONE)):
                    flows(browser, size_name, size, arguments.screenshots, stack)
                development_mail(browser, os.path.abspath(arguments.bin))
            except Exception:
                print("\n".join(browser.errors), file=sys.stderr)
                raise
            finally:
                browser.close()
            check("no errors in the browsers' consoles", not browser.errors, "\n".join(browser.errors))
    except Exception:
        print(stack.text()[-3000:], file=sys.stderr)
        raise
    finally:
        stack.stop()
    print("console: every flow passed")


if __name__ == "__main__":
    main()
