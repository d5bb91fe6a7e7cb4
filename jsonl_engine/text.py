"""Text as the engine reads it: one normalisation (NFKC, lower case, "&" as "and" except inside an abbreviation
such as "M&A") and one word tokenizer, shared by retrieval, routing and document identity; and the stopwords a
query's words are weighed against."""

from __future__ import annotations

import re
import unicodedata

_STOP_TEXT = """
a about above across after again against all almost along also although am among an and another any are
around as at be because been before being below between both but by can could did do does doing done down
during each either else etc ever every few for from further had has have having he her here hers herself him
himself his how however i if in into is it its itself just least less let like made make many may me might
more most much must my myself near neither no nor not now of off on once one only onto or other others
otherwise our ours ourselves out over own per perhaps please put rather re same shall she should since so
some still such than that the their theirs them themselves then there therefore these they this those
though through thus to too toward towards under until up upon us very via was we were what whatever when
whenever where whether which while who whom whose why will with within without would yet you your yours
yourself yourselves s t d ll m ve
answer answers respond response question questions give tell explain state describe define defined
calculate calculated calculation compute computed using use used utilize relying rely base based basing
judgment judgments judgement assume assuming perspective analyst details detail shown show
information provided primarily mainly round rounded decimal decimals place places unit units percent
percents percentage usd dollars dollar millions million billions billion thousands help want need kindly
respectively approximately roughly exactly extract number amount figure figures metric
metrics company companies business firm fy
"""
# Question framing: words that ask HOW to answer (instructions, hedges, format, rounding), never WHAT about.
# Words that can name a finance concept ("margin", "ratio", "measure", "significant", "notes") stay out.
_FRAMING_TEXT = """
useful usefulness helpful relevant relevance meaningful appropriate sensible important importance
explicitly clearly briefly concisely specifically simply precisely reasonably
provide providing according regarding concerning pertaining mention mentioned mentions outline outlined
given detailed showing shows find look looking know ask asked asking something anything anyone thing things
able answering answered responses brief concise sentence sentences paragraph expressed
nearest digits quantity yes considering summarize summarise elaborate clarify compare numerator denominator
"""
FRAMING = frozenset(_FRAMING_TEXT.split())
STOPWORDS = frozenset(_STOP_TEXT.split()) | FRAMING

_AMP_ABBREV = re.compile(r"(?<=\w)&(?=\w)")  # "M&A", "P&L", "PP&E", "D&A": one term, not "and"


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    if "&" not in text:  # the look-behind pattern is tried at every character: most of the cost of a long text
        return text
    return _AMP_ABBREV.sub(" ", text).replace("&", " and ")



_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """The lowercased alphanumeric words of `text`, normalised ("Procter & Gamble" -> procter, and, gamble)."""
    return _WORD.findall(normalise(text))
