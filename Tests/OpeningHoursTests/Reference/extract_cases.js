#!/usr/bin/env node
// Reads opening_hours.js's own test suite (test/test.js) and writes the cases our
// conformance test replays: every value with the instants it must be open, unknown
// or closed between, and every value it must refuse. The suite is run with stand-ins
// for its test runner and library, so nothing of the reference library itself runs.
//
//   git clone https://github.com/opening-hours/opening_hours.js ohjs   (or: fetch it)
//   node extract_cases.js ohjs > reference-cases.json
//
// The suite (LGPL-3.0, © Robin Schneider and contributors) is read, not copied: the
// output holds its values and expected intervals as data for our test.
'use strict';
process.env.TZ = 'Europe/Berlin'; // The suite's intervals are Berlin wall-clock times.
const fs = require('fs');
const path = require('path');

const root = process.argv[2];
if (!root) { console.error('usage: extract_cases.js <opening_hours.js checkout>'); process.exit(2); }
const source = fs.readFileSync(path.join(root, 'test/test.js'), 'utf8');

// The fields of a Nominatim answer we use: the point, the country and the state.
function parseNominatim(text) {
    const field = (name) => { const m = text.match(new RegExp('^\\s*' + name + ": '?([^'\\n]*)'?$", 'm')); return m ? m[1] : undefined; };
    return { lat: field('lat'), lon: field('lon'), address: { country_code: field('country_code'), state: field('state') } };
}
const cacheDir = path.join(root, 'src/holidays/nominatim_cache');
const stubs = {
    'yargs/helpers': { hideBin: (argv) => argv },
    'yargs': () => { const y = new Proxy({}, { get: (_, key) => key === 'parse' ? () => ({ 'library-file': 'x', locale: 'en' }) : () => y }); return y; },
    'path': path,
    'timekeeper': { travel() {}, reset() {}, freeze() {} },
    'glob': { sync: () => fs.readdirSync(cacheDir).filter((f) => f.endsWith('.yaml')).map((f) => 'src/holidays/nominatim_cache/' + f) },
    'yaml': { parse: parseNominatim },
    'fs': { readFileSync: (file) => fs.readFileSync(path.join(root, file), 'utf8') },
    'node:util': { styleText: (_, s) => s },
};
function fakeRequire(name) {
    if (name in stubs) return stubs[name];
    return function OpeningHoursStandIn() {}; // the library under test: never called
}

function pad(n) { return String(n).padStart(2, '0'); }
function local(value) {
    const date = value instanceof Date ? value : new Date(value);
    return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}
function place(nominatim) {
    if (!nominatim || !nominatim.address) return null;
    return { lat: Number(nominatim.lat), lon: Number(nominatim.lon), country: nominatim.address.country_code, state: nominatim.address.state || null };
}

function Collector() {
    this.cases = [];
    this.refused = [];
    this.nextChanges = [];
    this.addTest = (name, values, from, to, intervals, open, unknown, weekStable, nominatim, last, mode) => {
        for (const entry of (typeof values === 'string' ? [values] : values)) {
            const ignored = typeof entry !== 'string';
            this.cases.push({
                name, value: ignored ? entry[0] : entry, ignored: ignored ? entry[1] : null,
                from: local(from), to: local(to), mode: mode || 0, place: place(nominatim),
                intervals: intervals.map((i) => ({ from: local(i[0]), to: local(i[1]), unknown: !!i[2], comment: i[3] ?? null })),
                openMinutes: open / 60000, unknownMinutes: unknown / 60000,
            });
        }
    };
    this.addShouldFail = (name, values, nominatim, last, mode) => {
        for (const value of (typeof values === 'string' ? [values] : values)) if (typeof value === 'string') this.refused.push({ name, value, mode: mode || 0 });
    };
    this.addNextChangeTest = (name, value, from, expected, nominatim) => {
        this.nextChanges.push({ name, value, from: local(from), next: expected ? local(expected) : null, place: place(nominatim) });
    };
    for (const other of ['addShouldWarn', 'addStructuredWarnings', 'addCompMatchingRule', 'addPrettifyValue',
        'addPrettifyValueForLocale', 'addEqualTo']) this[other] = () => {};
}

const body = source.replace(/^#!.*\n/, '')
    .replace('const test = new opening_hours_test();', 'const test = new __Collector();')
    .replace('process.exit(test.run() ? 0 : 1);', '__done(test); return;');
let collected;
new Function('require', '__Collector', '__done', 'process', body)(fakeRequire, Collector, (t) => { collected = t; }, { env: {}, exit() {}, argv: [] });
const commit = (() => { try { return require('child_process').execSync('git -C ' + JSON.stringify(root) + ' rev-parse HEAD').toString().trim(); } catch { return null; } })();
process.stdout.write(JSON.stringify({ source: 'opening_hours.js test/test.js', commit, cases: collected.cases, refused: collected.refused, nextChanges: collected.nextChanges }, null, 0) + '\n');
