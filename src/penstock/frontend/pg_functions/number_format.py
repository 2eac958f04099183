"""PostgreSQL's numeric template patterns (formatting.c's NUM_*): to_char of numbers and
to_number.

9 a digit (blank when insignificant), 0 a digit (zero), . or D the decimal point, , or G a
group separator (only after a digit), S/MI/PL/SG/PR signs, V shifts by 10^n, EEEE
scientific, RN Roman numerals, TH ordinal suffix, FM fill mode; "quoted" text is copied.
Values go through decimal.Decimal: a numeric or integer rounds half away from zero, a float
rounds its binary value (sprintf's %.*f) after keeping DBL_DIG (15) or FLT_DIG (6) digits.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache

from penstock.errors import FEATURE_NOT_SUPPORTED, INVALID_TEXT_REPRESENTATION, NUMERIC_VALUE_OUT_OF_RANGE, SYNTAX_ERROR
from penstock.frontend.pg_functions.pg_error import PgFunctionError

_CTX = decimal.Context(prec=200, Emax=999999, Emin=-999999)


@dataclass
class Template:
    """A numeric template as PostgreSQL's NUMDesc_prepare reads it."""
    items: list[str] = field(default_factory=list)  # keyword ids ("9", "0", ".", ",", "S", "MI", ...) or "'"+text
    pre: int = 0
    post: int = 0
    multi: int = 0
    zero_start: int = 0  # 1-based position of the first 0 before the point, 0 if none
    zero_end: int = 0
    decimal: bool = False
    fill: bool = False
    lsign: int = 0  # -1 sign before the digits (S), 1 after, 0 none
    pre_lsign: int = 0
    bracket: bool = False
    minus: bool = False
    plus: bool = False
    eeee: bool = False
    roman: bool = False


_KEYWORDS = ["EEEE", "FM", "PR", "MI", "PL", "SG", "RN", "TH", "th", "rn", ".", ",", "0", "9", "B", "D", "G", "L",
             "S", "V", "b", "d", "g", "l", "s", "v", "fm", "pr", "mi", "pl", "sg", "eeee"]
_KEYWORDS.sort(key=len, reverse=True)


def _syntax(message: str) -> PgFunctionError:
    return PgFunctionError(SYNTAX_ERROR, message)


@lru_cache(maxsize=256)
def parse(fmt: str) -> Template:
    t = Template()
    i, n = 0, len(fmt)
    while i < n:
        if fmt[i] == '"':
            j = i + 1
            text = []
            while j < n and fmt[j] != '"':
                if fmt[j] == "\\" and j + 1 < n:
                    j += 1
                text.append(fmt[j])
                j += 1
            t.items.append("'" + "".join(text))
            i = j + 1
            continue
        key = next((k for k in _KEYWORDS if fmt.startswith(k, i)), None)
        if key is None:
            t.items.append("'" + fmt[i])
            i += 1
            continue
        i += len(key)
        k = key if key in ("th", "rn") else key.upper()
        if t.eeee and k != "EEEE":
            raise _syntax('"EEEE" must be the last pattern used')
        if k in ("9", "0"):
            if t.bracket:
                raise _syntax(f'"{k}" must be ahead of "PR"')
            if k == "9" and t.multi_on:  # type: ignore[attr-defined]
                t.multi += 1
            elif k == "0" and not t.decimal and t.zero_start == 0:
                t.zero_start = t.pre + 1
            if not (k == "9" and t.multi_on):  # type: ignore[attr-defined]
                if t.decimal:
                    t.post += 1
                else:
                    t.pre += 1
            if k == "0":
                t.zero_end = t.pre + t.post
        elif k in (".", "D"):
            if t.decimal:
                raise _syntax("multiple decimal points")
            if t.multi_on:  # type: ignore[attr-defined]
                raise _syntax('cannot use "V" and decimal point together')
            t.decimal, k = True, "."
        elif k == "FM":
            t.fill = True
        elif k == "S":
            if t.lsign:
                raise _syntax('cannot use "S" twice')
            if t.plus or t.minus or t.bracket:
                raise _syntax('cannot use "S" and "PL"/"MI"/"SG"/"PR" together')
            if not t.decimal:
                t.lsign, t.pre_lsign = -1, t.pre
            else:
                t.lsign = 1
        elif k in ("MI", "PL", "SG"):
            if t.lsign:
                raise _syntax(f'cannot use "S" and "{k}" together')
            t.minus = t.minus or k in ("MI", "SG")
            t.plus = t.plus or k in ("PL", "SG")
        elif k == "PR":
            if t.lsign or t.plus or t.minus:
                raise _syntax('cannot use "PR" and "S"/"PL"/"MI"/"SG" together')
            t.bracket = True
        elif k in ("RN", "rn"):
            t.roman = True
        elif k == "V":
            if t.decimal:
                raise _syntax('cannot use "V" and decimal point together')
            t.multi_on = True  # type: ignore[attr-defined]
        elif k == "EEEE":
            if t.eeee:
                raise _syntax('cannot use "EEEE" twice')
            if t.fill or t.lsign or t.bracket or t.minus or t.plus or t.roman or t.multi_on:  # type: ignore[attr-defined]
                raise _syntax('"EEEE" is incompatible with other formats')
            t.eeee = True
        t.items.append(k)
    return t


Template.multi_on = False  # type: ignore[attr-defined]


def _number_text(value: Decimal, t: Template, float_digits: int | None) -> tuple[str, str, int, int]:
    """(sign, digits with the point, pre, post): the value as the template prints it, and the
    template's digit counts after V and a float's precision limit."""
    pre, post = t.pre, t.post
    if t.multi:
        value = value.scaleb(t.multi, _CTX)
        pre += t.multi
    if float_digits is not None:
        int_len = len(f"{abs(value):.0f}")
        post = 0 if int_len >= float_digits else min(post, float_digits - int_len)
        text = f"{float(value):.{post}f}" if abs(value) < Decimal("1e300") else f"{value:.{post}f}"
    else:
        text = f"{value.quantize(Decimal(1).scaleb(-post), decimal.ROUND_HALF_UP, _CTX):f}"
        if text.startswith("-") and Decimal(text) == 0:
            text = text[1:]
    sign = "-" if text.startswith("-") else "+"
    return sign, text.lstrip("-"), pre, post


def to_char(value: Decimal, fmt: str, float_digits: int | None = None) -> str:
    """`value` by template `fmt` (float_digits: 15 for float8, 6 for float4, None for exact)."""
    t = parse(fmt)
    if t.roman:
        return _roman(value, t, float_digits is None)
    if t.eeee:
        return _scientific(value, t, float_digits)
    sign, number, pre, post = _number_text(value, t, float_digits)
    int_len = len(number.split(".")[0])
    spaces = 0
    if int_len < pre:
        spaces = pre - int_len
    elif int_len > pre:
        number = "#" * pre + ("." + "#" * post if post or t.decimal else "")
    return _Printer(t, sign, number, spaces, post).run()


class _Printer:
    """Writes a number into its template: PostgreSQL's to_char state machine, in which the
    sign is written just before the first digit it prints and a number shorter than the
    template starts with blanks (or zeros from the first 0)."""

    def __init__(self, t: Template, sign: str, number: str, spaces: int, post: int) -> None:
        self.t, self.sign, self.number, self.spaces, self.post = t, sign, number, spaces, post
        self.fill, self.bracket, self.minus, self.plus = t.fill, t.bracket, t.minus, t.plus
        self.lsign = t.lsign
        self.zero = t.zero_start > 0
        self.zero_start = t.zero_start - 1 if t.zero_start else 0
        if self.plus or self.minus:
            self.sign_wrote = not (self.plus and not self.minus)
        else:
            if sign != "-" and self.bracket and self.fill:
                self.bracket = False
            self.sign_wrote = sign == "+" and self.fill and not self.lsign
            if self.lsign == -1 and t.pre == t.pre_lsign:
                self.lsign = 1
        self.count = post + t.pre + t.multi - 1
        self.last_relevant: int | None = None
        if self.fill and t.decimal and "." in number:
            dot = number.index(".")
            self.last_relevant = max([dot] + [i for i in range(dot + 1, len(number)) if number[i] != "0"])
            if t.zero_end > spaces:
                self.last_relevant = max(self.last_relevant, t.zero_end - spaces)
        if not self.sign_wrote and spaces == 0:
            self.count += 1
        self.p = 0  # position in number
        self.curr = 0
        self.digit_in = False
        self.out: list[str] = []

    def _predec_space(self) -> bool:
        return not self.zero and self.p == 0 and self.number[:1] == "0" and self.post != 0

    def _relevant_is_point(self) -> bool:
        return self.last_relevant is not None and self.number[self.last_relevant:self.last_relevant + 1] == "."

    def numpart(self, kind: str) -> None:
        self.digit_in = False
        if (not self.sign_wrote and (self.curr >= self.spaces or (self.zero and self.zero_start == self.curr))
                and (not self._predec_space() or self._relevant_is_point())):
            if self.lsign:
                if self.lsign == -1:
                    self.out.append(self.sign)
                    self.sign_wrote = True
            elif self.bracket:
                self.out.append(" " if self.sign == "+" else "<")
                self.sign_wrote = True
            else:
                if self.sign == "-" or not self.fill:
                    self.out.append("-" if self.sign == "-" else " ")
                self.sign_wrote = True
        if self.curr < self.spaces and (self.zero_start > self.curr or not self.zero):
            if not self.fill:
                self.out.append(" ")
        elif self.zero and self.curr < self.spaces and self.zero_start <= self.curr:
            self.out.append("0")
            self.digit_in = True
        else:
            c = self.number[self.p] if self.p < len(self.number) else ""
            if c == ".":
                if not self._relevant_is_point() or self.fill:
                    self.out.append(".")
            elif self.last_relevant is not None and self.p > self.last_relevant and kind != "0":
                pass
            elif self._predec_space():
                if not self.fill:
                    self.out.append(" ")
                elif self._relevant_is_point():
                    self.out.append("0")
            else:
                self.out.append(c)
                self.digit_in = True
            if c:
                self.p += 1
        end = self.count + (1 if self.spaces else 0) + (1 if self.t.decimal else 0)
        if self.last_relevant is not None and self.last_relevant == self.p:
            end = self.curr
        if self.curr + 1 == end:
            if self.sign_wrote and self.bracket:
                self.out.append(" " if self.sign == "+" else ">")
            elif self.lsign == 1:
                self.out.append(self.sign)
        self.curr += 1

    def run(self) -> str:
        from penstock.frontend.pg_functions.datetime_format import ordinal
        for item in self.t.items:
            if item.startswith("'"):
                self.out.append(item[1:])
            elif item in ("9", "0", "."):
                self.numpart(item)
            elif item in (",", "G"):
                if self.digit_in:
                    self.out.append(",")
                elif not self.fill:
                    self.out.append(" ")
            elif item == "L":
                self.out.append(" ")
            elif item in ("TH", "th"):
                if not (self.number.startswith("#") or self.sign == "-" or self.t.decimal):
                    self.out.append(ordinal(int(self.number), item == "TH"))
            elif item == "MI":
                if self.sign == "-":
                    self.out.append("-")
                elif not self.fill:
                    self.out.append(" ")
            elif item == "PL":
                if self.sign == "+":
                    self.out.append("+")
                elif not self.fill:
                    self.out.append(" ")
            elif item == "SG":
                self.out.append(self.sign)
        return "".join(self.out)


def _scientific(value: Decimal, t: Template, float_digits: int | None) -> str:
    post = t.post
    if float_digits is not None:
        text = f"{float(value):+.{post}e}"
        mantissa, _, exp = text.partition("e")
        text = mantissa + "e" + exp[0] + exp[1:].lstrip("0").rjust(2, "0")
        return (" " + text[1:]) if text[0] == "+" else text
    exponent = 0 if value == 0 else value.adjusted()
    mantissa = abs(value).scaleb(-exponent, _CTX)
    rounded = mantissa.quantize(Decimal(1).scaleb(-post), decimal.ROUND_HALF_UP, _CTX)  # 99.995 -> 10.00e+01 as PG
    body = f"{rounded:f}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    return ("-" if value < 0 else " ") + body


def _roman(value: Decimal, t: Template, exact: bool) -> str:
    n = int(value.to_integral_value(decimal.ROUND_HALF_UP if exact else decimal.ROUND_HALF_EVEN, _CTX))
    if exact and not -2**31 <= n < 2**31:
        raise PgFunctionError(NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range")
    lower = "rn" in t.items
    if not 1 <= n <= 3999:
        return "#" * 15
    parts = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
             (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    out = ""
    for amount, letters in parts:
        while n >= amount:
            out, n = out + letters, n - amount
    out = out.lower() if lower else out
    return out if t.fill else out.rjust(15)


def to_number(text: str, fmt: str) -> Decimal:
    """to_number(text, fmt): the digits the template's digit positions read, with its sign
    and decimal point; group separators and literal text are skipped."""
    t = parse(fmt)
    if t.eeee or t.roman:
        raise PgFunctionError(FEATURE_NOT_SUPPORTED, f'"{"EEEE" if t.eeee else "RN"}" not supported for input')
    negative = "-" in text or ("<" in text and t.bracket)
    digits, point_seen, post = [], False, 0
    budget_pre, budget_post = t.pre or len(text), t.post
    for c in text:
        if c.isdigit():
            if point_seen:
                if post < budget_post:
                    digits.append(c)
                    post += 1
            elif len(digits) < budget_pre:
                digits.append(c)
        elif c == "." and t.decimal:
            point_seen = True
    if not digits:
        if text.strip() and not any(c.isdigit() for c in text):
            raise PgFunctionError(INVALID_TEXT_REPRESENTATION, 'invalid input syntax for type numeric: " "')
        return Decimal(0)
    number = Decimal("".join(digits)).scaleb(-post)
    if t.multi:
        number = number.scaleb(-t.multi, _CTX)
    return -number if negative else number
