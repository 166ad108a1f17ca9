#!/usr/bin/env python3
"""The conformance cases, one a line: kind <TAB> unit <TAB> hex(input).

Every literal input of the parser's own tests (core/src/parse/tests.rs: the date strings, the
strings without offset, the numbers, the $numberLong strings; core/src/row_ttl.rs: the row TTL
seconds), then generated ones in the shape of its random tests (seeded, so every run is the
same): random instants in the three formats of round_trip_random_instants, random strings over
the alphabet of arbitrary_input_never_panics and mutations of its valid date, and random
numbers. The expected answers are not computed here: tests/managed/cases (the Rust parser
itself) appends them.

kinds: date, datestring, number, long, rowsec (see tests/managed/cases/src/main.rs), and
jnumber: a JSON number as the Rust edition reads it from a jsonb value, whose text it gets
from PostgreSQL's numeric_normalize (no exponent, no trailing zeros after the point): the
`number` line carries that text, the SQL side reads the original through ttl_timestamp(jsonb).
"""
import datetime
import decimal
import random
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
GENERATED = int(sys.argv[2]) if len(sys.argv) > 2 else 20000


def unescape(lit):
    """A Rust string literal's body as text."""
    out, i = [], 0
    while i < len(lit):
        c = lit[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        n = lit[i + 1]
        if n == "u":
            end = lit.index("}", i)
            out.append(chr(int(lit[i + 3:end], 16)))
            i = end + 1
            continue
        out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"'}[n])
        i += 2
    return "".join(out)


def fn_body(source, name):
    start = source.index("fn " + name)
    nxt = source.find("\n#[test]", start)
    return source[start:nxt if nxt > 0 else len(source)]


LIT = r'"((?:[^"\\]|\\.)*)"'
rows = []


def emit(kind, unit, text):
    hexed = text.encode("utf-8").hex()
    rows.append(f"{kind}\t{unit}\t{hexed}\t{hexed}")


def normalized(text):
    """numeric_normalize of a JSON number: plain digits, no trailing zeros after the point."""
    d = decimal.Decimal(text)
    s = format(d, "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    if s in ("-0", ""):
        s = "0"
    return s


JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\Z")


def number_cases(text, unit):
    emit("number", unit, text)
    if JSON_NUMBER.match(text):
        decimal.getcontext().prec = 2000
        try:
            norm = normalized(text)
        except decimal.InvalidOperation:
            return
        if len(norm) < 1000:
            # kind jnumber: the Rust side parses the normalized text, SQL reads the JSON text
            rows.append(f"jnumber\t{unit}\t{norm.encode().hex()}\t{text.encode().hex()}")


parse_tests = open(f"{ROOT}/core/src/parse/tests.rs", encoding="utf-8").read()
for name in ("date_strings_table", "strings_without_offset_are_local"):
    for m in re.finditer(r"^\s*\(" + LIT + ",", fn_body(parse_tests, name), re.M):
        text = unescape(m.group(1))
        emit("date", "s", text)
        emit("datestring", "s", text)
for m in re.finditer(r"^\s*\(" + LIT + r",\s*(Seconds|Milliseconds),", fn_body(parse_tests, "numbers_table"), re.M):
    number_cases(unescape(m.group(1)), "s" if m.group(2) == "Seconds" else "ms")
for m in re.finditer(r"parse_unix_integer_string\(" + LIT, fn_body(parse_tests, "number_long_strings")):
    emit("long", "ms", unescape(m.group(1)))
row_tests = open(f"{ROOT}/core/src/row_ttl.rs", encoding="utf-8").read()
for m in re.finditer(r"^\s*\(" + LIT + ",", fn_body(row_tests, "seconds"), re.M):
    emit("rowsec", "s", unescape(m.group(1)))
literal = len(rows)

rng = random.Random(0x7717)
# round_trip_random_instants: instants from 0001-01-02 to 9999-12-30, random offsets, 0-6
# fraction digits, in its three formats
lo = datetime.datetime(1, 1, 2, tzinfo=datetime.timezone.utc)
span = (datetime.datetime(9999, 12, 30, tzinfo=datetime.timezone.utc) - lo).total_seconds()
for _ in range(GENERATED // 4):
    instant = lo + datetime.timedelta(microseconds=rng.randrange(int(span) * 10**6))
    minutes = rng.randint(-(23 * 60 + 59), 23 * 60 + 59)
    local = instant.astimezone(datetime.timezone(datetime.timedelta(minutes=minutes)))
    digits = rng.randint(0, 6)
    fraction = f".{local.microsecond:06d}"[:digits + 1] if digits else ""
    sign = "+" if minutes >= 0 else "-"
    hh, mm = divmod(abs(minutes), 60)
    def iso(t, sep):
        return f"{t.year:04d}-{t.month:02d}-{t.day:02d}{sep}{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    form = rng.randrange(3)
    if local.year < 1 or local.year > 9999:
        continue
    if form == 0:
        text = iso(local, "T") + fraction + f"{sign}{hh:02d}:{mm:02d}"
    elif form == 1:
        text = iso(local, " ") + fraction + f"{sign}{hh:02d}{mm:02d}"
    else:
        text = iso(instant, "T") + (f".{instant.microsecond:06d}"[:digits + 1] if digits else "") + "Z"
    emit("date", "s", text)
# arbitrary_input_never_panics: random strings over its alphabet (no NUL: PostgreSQL's text
# cannot hold one), and mutations of a valid date
alphabet = "0123456789-:.,+TZtz eE \xff"
for i in range(GENERATED // 4):
    text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(40)))
    emit("date", "s", text)
    number_cases(text, rng.choice(["s", "ms"]))
base = "2019-05-27T21:20:00.123+01:30"
for _ in range(GENERATED // 4):
    chars = list(base)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(chars))
        op = rng.randrange(3)
        if op == 0:
            chars[at] = rng.choice(alphabet)
        elif op == 1:
            del chars[at]
        else:
            chars.insert(at, rng.choice(alphabet))
    text = "".join(chars)
    emit("date", "s", text)
    emit("datestring", "s", text)
# numbers: seconds and milliseconds around now, fractions, exponents, huge and tiny
for _ in range(GENERATED // 4):
    shape = rng.randrange(5)
    if shape == 0:
        text = f"{rng.randrange(10**10)}.{rng.randrange(10**rng.randint(1, 12))}"
    elif shape == 1:
        text = f"{rng.randrange(10**13)}"
    elif shape == 2:
        text = f"{rng.randint(-9, 9)}.{rng.randrange(1000)}e{rng.randint(-30, 30)}"
    elif shape == 3:
        text = "9" * rng.randint(1, 30)
    else:
        text = f"-{rng.randrange(10**6)}.{rng.randrange(10**9)}"
    number_cases(text, rng.choice(["s", "ms"]))

sys.stderr.write(f"cases.py: {literal} literal cases, {len(rows) - literal} generated\n")
print("\n".join(rows))
