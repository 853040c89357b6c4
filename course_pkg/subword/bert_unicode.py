"""BERT's character classes as ``tokenizers`` has them: controls, punctuation, non-spacing marks.

One concern: the tables that :mod:`~course_pkg.subword.wordpiece` reads instead of Python's
``unicodedata``. ``tokenizers``' ``BertNormalizer`` and ``BertPreTokenizer`` (the rules of
``BertTokenizer`` in transformers 5 and of ``BertTokenizerFast`` in 4) take these classes from
the Rust crate ``unicode_categories``, whose tables are older than any Python's: a character
that Unicode assigned later (U+061D ARABIC END OF TEXT MARK, Unicode 14) is there neither
punctuation nor a control, and an unassigned one (category ``Cn``: U+0378, the noncharacters
U+FDD0 and U+FFFF, an emoji newer than Python's tables) is kept as a letter, never dropped. The
tables below are those classes, read from ``tokenizers`` 0.23 code point by code point (every
one of the 1,114,112), as ranges of hex code points; ``tests/test_subword_unicode.py`` checks
them against ``tokenizers``. So the course gives ``BertTokenizer``'s ids on every Python,
whatever its Unicode version. Lone surrogates (U+D800..U+DFFF, which no UTF-8 text holds and
``tokenizers`` cannot take) count as controls: dropped, as Python's category ``Cs`` says.
"""

from __future__ import annotations

from bisect import bisect_right

__all__ = ["CONTROLS", "NONSPACING_MARKS", "PUNCTUATION", "is_bert_control", "is_bert_punctuation",
           "is_nonspacing_mark"]

# dropped by BertNormalizer(clean_text=True): Cc (not tab, newline, carriage return), Cf, Co,
# U+0000, U+FFFD (and the surrogates)
CONTROLS = (
    "0-8 B-C E-1F 7F-9F AD 600-605 61C 6DD 70F 180E 200B-200F 202A-202E 2060-2064 2066-206F D800-DFFF "
    "E000-F8FF FEFF FFF9-FFFB FFFD 110BD 1BCA0-1BCA3 1D173-1D17A E0001 E0020-E007F F0000-FFFFD "
    "100000-10FFFD"
)
# split apart by BertPreTokenizer, besides ASCII's non-alphanumeric printable characters
PUNCTUATION = (
    "A1 A7 AB B6-B7 BB BF 37E 387 55A-55F 589-58A 5BE 5C0 5C3 5C6 5F3-5F4 609-60A 60C-60D 61B 61E-61F "
    "66A-66D 6D4 700-70D 7F7-7F9 830-83E 85E 964-965 970 AF0 DF4 E4F E5A-E5B F04-F12 F14 F3A-F3D F85 "
    "FD0-FD4 FD9-FDA 104A-104F 10FB 1360-1368 1400 166D-166E 169B-169C 16EB-16ED 1735-1736 17D4-17D6 "
    "17D8-17DA 1800-180A 1944-1945 1A1E-1A1F 1AA0-1AA6 1AA8-1AAD 1B5A-1B60 1BFC-1BFF 1C3B-1C3F "
    "1C7E-1C7F 1CC0-1CC7 1CD3 2010-2027 2030-2043 2045-2051 2053-205E 207D-207E 208D-208E 2308-230B "
    "2329-232A 2768-2775 27C5-27C6 27E6-27EF 2983-2998 29D8-29DB 29FC-29FD 2CF9-2CFC 2CFE-2CFF 2D70 "
    "2E00-2E2E 2E30-2E42 3001-3003 3008-3011 3014-301F 3030 303D 30A0 30FB A4FE-A4FF A60D-A60F A673 "
    "A67E A6F2-A6F7 A874-A877 A8CE-A8CF A8F8-A8FA A8FC A92E-A92F A95F A9C1-A9CD A9DE-A9DF AA5C-AA5F "
    "AADE-AADF AAF0-AAF1 ABEB FD3E-FD3F FE10-FE19 FE30-FE52 FE54-FE61 FE63 FE68 FE6A-FE6B FF01-FF03 "
    "FF05-FF0A FF0C-FF0F FF1A-FF1B FF1F-FF20 FF3B-FF3D FF3F FF5B FF5D FF5F-FF65 10100-10102 1039F "
    "103D0 1056F 10857 1091F 1093F 10A50-10A58 10A7F 10AF0-10AF6 10B39-10B3F 10B99-10B9C 11047-1104D "
    "110BB-110BC 110BE-110C1 11140-11143 11174-11175 111C5-111C9 111CD 111DB 111DD-111DF 11238-1123D "
    "112A9 114C6 115C1-115D7 11641-11643 1173C-1173E 12470-12474 16A6E-16A6F 16AF5 16B37-16B3B 16B44 "
    "1BC9F 1DA87-1DA8B"
)
# removed by BertNormalizer(strip_accents=True) after NFD
NONSPACING_MARKS = (
    "300-33F 342 345-36F 483-487 591-5BD 5BF 5C1-5C2 5C4-5C5 5C7 610-61A 64B-65F 670 6D6-6DC 6DF-6E4 "
    "6E7-6E8 6EA-6ED 711 730-74A 7A6-7B0 7EB-7F3 816-819 81B-823 825-827 829-82D 859-85B 8E3-902 93A "
    "93C 941-948 94D 951-957 962-963 981 9BC 9C1-9C4 9CD 9E2-9E3 A01-A02 A3C A41-A42 A47-A48 A4B-A4D "
    "A51 A70-A71 A75 A81-A82 ABC AC1-AC5 AC7-AC8 ACD AE2-AE3 B01 B3C B3F B41-B44 B4D B56 B62-B63 B82 "
    "BC0 BCD C00 C3E-C40 C46-C47 C4A-C4D C55-C56 C62-C63 C81 CBC CBF CC6 CCC-CCD CE2-CE3 D01 D41-D44 "
    "D4D D62-D63 DCA DD2-DD4 DD6 E31 E34-E3A E47-E4E EB1 EB4-EB9 EBB-EBC EC8-ECD F18-F19 F35 F37 F39 "
    "F71-F72 F74 F77 F79-F7E F80 F82-F84 F86-F87 F8D-F92 F94-F97 F99-F9C F9E-FA1 FA3-FA6 FA8-FAB "
    "FAD-FB8 FBA-FBC FC6 102D-1030 1032-1037 1039-103A 103D-103E 1058-1059 105E-1060 1071-1074 1082 "
    "1085-1086 108D 109D 135D-135F 1712-1714 1732-1734 1752-1753 1772-1773 17B4-17B5 17B7-17BD 17C6 "
    "17C9-17D3 17DD 180B-180D 18A9 1920-1922 1927-1928 1932 1939-193B 1A17-1A18 1A1B 1A56 1A58-1A5E "
    "1A60 1A62 1A65-1A6C 1A73-1A7C 1A7F 1AB0-1ABD 1B00-1B03 1B34 1B36-1B3A 1B3C 1B42 1B6B-1B73 "
    "1B80-1B81 1BA2-1BA5 1BA8-1BA9 1BAB-1BAD 1BE6 1BE8-1BE9 1BED 1BEF-1BF1 1C2C-1C33 1C36-1C37 "
    "1CD0-1CD2 1CD4-1CE0 1CE2-1CE8 1CED 1CF4 1CF8-1CF9 1DC0-1DF5 1DFC-1DFF 20D0-20DC 20E1 20E5-20F0 "
    "2CEF-2CF1 2D7F 2DE0-2DFF 302A-302D 3099-309A A66F A674-A67D A69E-A69F A6F0-A6F1 A802 A806 A80B "
    "A825-A826 A8C4 A8E0-A8F1 A926-A92D A947-A951 A980-A982 A9B3 A9B6-A9B9 A9BC A9E5 AA29-AA2E "
    "AA31-AA32 AA35-AA36 AA43 AA4C AA7C AAB0 AAB2-AAB4 AAB7-AAB8 AABE-AABF AAC1 AAEC-AAED AAF6 ABE5 "
    "ABE8 ABED FB1E FE00-FE0F FE20-FE2F 101FD 102E0 10376-1037A 10A01-10A03 10A05-10A06 10A0C-10A0F "
    "10A38-10A3A 10A3F 10AE5-10AE6 11001 11038-11046 1107F-11081 110B3-110B6 110B9-110BA 11100-11102 "
    "11127-1112B 1112D 11130-11134 11173 11180-11181 111B6-111BE 111CA-111CC 1122F-11231 11234 "
    "11236-11237 112DF 112E3-112EA 11300-11301 1133C 11340 11366-1136C 11370-11374 114B3-114B8 114BA "
    "114BF-114C0 114C2-114C3 115B2-115B5 115BC-115BD 115BF-115C0 115DC-115DD 11633-1163A 1163D "
    "1163F-11640 116AB 116AD 116B0-116B5 116B7 1171D-1171F 11722-11725 11727-1172B 16AF0-16AF4 "
    "16B30-16B36 16F8F-16F92 1BC9D-1BC9E 1D167-1D169 1D17B-1D182 1D185-1D18B 1D1AA-1D1AD 1D242-1D244 "
    "1DA00-1DA36 1DA3B-1DA6C 1DA75 1DA84 1DA9B-1DA9F 1DAA1-1DAAF 1E8D0-1E8D6 E0100-E01EF"
)


def _ranges(table) -> tuple:
    """``(starts, ends)``: the sorted bounds of the ranges written ``"300-36F 483"``."""
    starts, ends = [], []
    for item in table.split():
        low, _, high = item.partition("-")
        starts.append(int(low, 16))
        ends.append(int(high or low, 16))
    return starts, ends


def _member(bounds, char) -> bool:
    starts, ends = bounds
    code = ord(char)
    i = bisect_right(starts, code) - 1
    return i >= 0 and code <= ends[i]


_CONTROL_BOUNDS = _ranges(CONTROLS)
_PUNCTUATION_BOUNDS = _ranges(PUNCTUATION)
_MARK_BOUNDS = _ranges(NONSPACING_MARKS)


def is_bert_control(char) -> bool:
    """Whether ``BertNormalizer(clean_text=True)`` drops ``char`` (one-character str)."""
    return _member(_CONTROL_BOUNDS, char)


def is_bert_punctuation(char) -> bool:
    """Whether ``BertPreTokenizer`` splits ``char`` off as a word of its own."""
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return _member(_PUNCTUATION_BOUNDS, char)


def is_nonspacing_mark(char) -> bool:
    """Whether ``BertNormalizer(strip_accents=True)`` removes ``char`` after NFD (an accent)."""
    return _member(_MARK_BOUNDS, char)
