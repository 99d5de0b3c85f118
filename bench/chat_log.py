"""A long chat between two people, one line per turn, split into dated session files (a workload).

``bench/quality.py`` indexes it as a workspace of its own and asks the questions below: each
answer is one turn of the log, so the figures say whether a result cites *that* line or only its
file. Everything is generated here, deterministically (a fixed seed, no download): filler turns
drawn from templates that talk about the same things as the facts (the dentist, the flight, the
rent...) without giving them, and planted turns that give them. Some facts change later in the
chat; their question asks for the current state, and the later turn is the answer.

Usage: .venv/bin/python bench/chat_log.py DIR   (writes DIR/MEMORY.md and DIR/memory/*.md, prints
the queries as JSON)

A query: ``{"id", "q", "targets": [path], "kind": "chat-fact" | "chat-temporal" | "chat-multi",
"lines": {path: [[line, line]]}}``; the questions were written with the facts, never tuned on.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import sys
from pathlib import Path

SEED = 21
A, B = "Lena", "Sam"
SESSIONS = 42
FIRST_DAY = dt.date(2025, 1, 6)

# (session, speaker, text, question, kind); a session may hold several; the question is about the turn.
FACTS = [
    (1, B, "My sister Carla is getting married on 14 June, in Porto, at a quinta by the river.",
     "Where is Sam's sister getting married?", "chat-fact"),
    (2, A, "The router password is on the sticker under the fruit bowl, not on the box.",
     "Where can I find the password for the Wi-Fi router?", "chat-fact"),
    (3, A, "Book club is on Tuesdays at 19:30 at Hanna's place from now on.",
     None, "chat-temporal"),
    (4, B, "Pixel's vaccination is due on 22 February at Dr. Ahmadi's practice on Lindenstrasse.",
     "When is the cat due for its jab, and where?", "chat-fact"),
    (5, A, "Dentist moved my appointment to Thursday 9:40, so I'll be late to the office.",
     "What time is Lena's dentist appointment?", "chat-fact"),
    (6, B, "We finally bought it: a used Skoda Octavia estate, 2019, silver, 68,000 km.",
     "Which car did they end up buying?", "chat-fact"),
    (7, A, "Reminder that I'm allergic to hazelnuts, so no Nutella cake for me please.",
     "Which kind of nut can Lena not eat?", "chat-fact"),
    (8, B, "Booked the flight to Lisbon: TP 571, leaves 07:15 on 3 May from BER.",
     "What's the flight number for the Lisbon trip?", "chat-fact"),
    (9, A, "For Dad's 60th I'm getting him Kind of Blue on vinyl and a record cleaning kit.",
     "What present is Lena giving her father for his sixtieth?", "chat-fact"),
    (10, B, "The secret in Grandma's soup is a spoon of smoked paprika and a splash of sherry vinegar.",
     "What makes grandma's soup taste the way it does?", "chat-fact"),
    (11, A, "Landlord wrote today: the rent goes up to 1,120 EUR from April.",
     "How much is the rent going to be from April?", "chat-fact"),
    (12, B, "Signed up for the Leipzig half marathon on 6 April, start block C.",
     "Which race did Sam register for?", "chat-fact"),
    (13, A, "Let's do the housewarming on Saturday the 15th, I'll tell everyone.",
     None, "chat-temporal"),
    (14, B, "The plumber is Herr Duda, his mobile is 0176 5550 1234, he comes before 8.",
     "What's the plumber's phone number?", "chat-fact"),
    (15, A, "Housewarming moves to the 22nd, the 15th clashes with Mo's birthday.",
     "On which date is the housewarming party?", "chat-temporal"),
    (16, B, "We watched Past Lives last night and I cried through the whole ending.",
     "Which film had Sam in tears?", "chat-fact"),
    (17, A, "I start at Brightline on 1 March, as team lead for data engineering.",
     "When does Lena begin her new job?", "chat-fact"),
    (18, B, "Mo still has our drill since the shelf thing in January.",
     "Who borrowed the drill?", "chat-fact"),
    (19, A, "The olive tree needs repotting in spring, and it wants cactus soil, not normal compost.",
     "What soil should the olive tree get when it is repotted?", "chat-fact"),
    (20, B, "New code for the bike lock is 4719, I changed it after the party.",
     "What is the combination of the bike lock?", "chat-fact"),
    (21, A, "Book club moves to Wednesdays from March, Tuesday is yoga now.",
     "Which evening does the book club meet these days?", "chat-temporal"),
    (22, B, "Our household insurance is with HUK and the policy runs until 31 October.",
     "Until when does the home contents insurance run?", "chat-fact"),
    (23, A, "Maybe Croatia in August? Split looked nice and not too expensive.",
     None, "chat-temporal"),
    (24, B, "Booked Tbilisi Garden for Friday 20:00, table for four, the Georgian place on Kastanienallee.",
     "Where is the dinner on Friday booked?", "chat-fact"),
    (25, A, "Spare key is with Mrs. Okonkwo on the 2nd floor, she's home most afternoons.",
     "Who keeps the spare key to the flat?", "chat-fact"),
    (26, B, "Decided: Sardinia in August, the apartment in Cala Gonone, 9 to 23 August.",
     "Where are they going on holiday in the summer?", "chat-temporal"),
    (27, A, "I need new hiking boots before Sardinia, size 39, the old ones are falling apart.",
     "What shoe size does Lena take?", "chat-fact"),
    (28, B, "Meter reading today was 48213 kWh, I sent it to the electricity company.",
     "What was the last electricity meter reading?", "chat-fact"),
    (29, A, "We're switching the internet to 1&1 next month, it's 10 EUR cheaper.",
     None, "chat-temporal"),
    (30, B, "I'm doing the Italian A2 course at the Volkshochschule, Mondays at 18:00.",
     "When does Sam have Italian lessons?", "chat-fact"),
    (32, A, "Physio for my knee: six sessions, Tuesdays at 17:30 with Jana at the practice on Oderstrasse.",
     "When are Lena's physiotherapy appointments?", "chat-fact"),
    (33, B, "We said 150 each for Carla's wedding present, right? I'll put it in the card.",
     "How much is each of them putting in for the wedding gift?", "chat-fact"),
    (35, A, "Cancelled the switch to 1&1, Telekom matched the price so we're staying with them.",
     "Which internet provider are they with now?", "chat-temporal"),
    (36, B, "The passport renewal appointment at the Bürgeramt is on 12 July at 8:20.",
     "When is Sam's appointment to renew the passport?", "chat-fact"),
    (38, A, "Mum's hip operation went fine, she's in rehab in Bad Nauheim for three weeks.",
     "How did the operation on Lena's mother go?", "chat-fact"),
    (40, B, "The babysitter for Nora is Jule, 14 EUR an hour, she can do Fridays.",
     "How much does the babysitter charge?", "chat-fact"),
]

# Multi-session questions: each instance told in another session, every one of them the answer
# (``chat-multi``: the figure is the share with every session among the first five files). Planted
# over filler turns with a generator of their own, so the rest of the log is the same turn for turn.
MULTI = [
    ("Which cities did Sam travel to?", [
        (3, B, "Back from Vienna, the conference was worth it."),
        (17, B, "Landed in Oslo, it's freezing here."),
        (29, B, "Flight to Madrid got delayed two hours, but I'm here now.")]),
    ("Which books did the book club pick?", [
        (5, A, "Book club picked Klara and the Sun for next time."),
        (20, A, "Next book club book is The Overstory, it's huge."),
        (37, A, "We chose Tomorrow, and Tomorrow, and Tomorrow for book club.")]),
    ("Why did Pixel go to the vet?", [
        (9, B, "Took Pixel to the vet, it was just a hairball."),
        (24, B, "Vet again with Pixel, she has an ear infection, drops twice a day."),
        (39, B, "Pixel's check-up at the vet went fine, she's 4.2 kg.")]),
    ("What did Lena bake?", [
        (2, A, "I baked a rhubarb crumble for the neighbours."),
        (14, A, "Made banana bread with the brown bananas."),
        (31, A, "Baked focaccia with rosemary from the balcony.")]),
    ("Which concerts did they go to?", [
        (6, B, "The Arlo Parks concert at the Columbiahalle was amazing."),
        (22, A, "Got us tickets for Bonobo at the Tempodrom in May."),
        (34, B, "Still buzzing from the Khruangbin gig last night.")]),
]

# Filler: the same topics, never the facts.
TOPICS = [
    "I still need to call the dentist about that crown",
    "the car needs new wipers, remind me",
    "did you check the flights for the autumn yet?",
    "the landlord hasn't answered about the radiator",
    "Pixel threw up on the sofa again",
    "book club this week is the Ishiguro, I'm only halfway",
    "your mum called, nothing urgent",
    "the plants on the balcony look thirsty",
    "I moved the bike into the courtyard",
    "the insurance letter is on the kitchen table",
    "can you pick up bread on the way home?",
    "we're out of oat milk",
    "Mo says hi, he wants to come over soon",
    "the Wi-Fi dropped again during my call",
    "I'm so tired, the neighbours were loud until two",
    "running club was cancelled because of the rain",
    "work is chaos this week, the release slipped",
    "shall we cook the lentil thing tonight?",
    "I found a nice recipe for the soup but it needs a blender",
    "the electricity bill came, it's a bit higher than last time",
    "Carla sent photos of the dress, it's lovely",
    "I booked nothing yet for the summer, too many options",
    "my knee hurts a bit after the stairs",
    "there's a parcel for you at the kiosk",
    "the heating is making that noise again",
    "I'll be home around seven",
    "did you pay the internet bill?",
    "the babysitter question is still open",
    "my Italian is getting worse, not better",
    "someone left a drill in the hallway, is it ours?",
]
SHORT = ["ok", "sure", "haha", "yes", "no idea", "sounds good", "fine by me", "love you", "later", "will do",
         "thanks", "right", "good point", "hmm", "not sure", "ok cool", "see you", "yep", "agreed", "on my way"]
QUESTIONS = ["what time?", "which one?", "really?", "are you sure?", "how come?", "where?", "since when?",
             "and then?", "do we need anything?", "can you do it?"]
TAILS = ["", "", "", " I think", " again", " btw", " today", " tbh", " apparently", " as usual"]


STYLES = {
    "time": lambda clock, speaker, text: f"[{clock}] {speaker}: {text}",
    # Chat exports and hand-kept logs in Markdown often bold the name, colon inside ...
    "bold": lambda clock, speaker, text: f"**{speaker}:** {text}",
    # ... and leave a blank line after each turn, so that each renders as a paragraph of its own.
    "spaced": lambda clock, speaker, text: f"**{speaker}:** {text}\n",
}


def generate(root: Path, style: str = "time") -> list[dict]:
    """Write the log under ``root`` (``memory/YYYY-MM-DD.md`` and a small ``MEMORY.md``); the queries.

    ``style``: how a turn is written (``STYLES``); the same chat, the same lines, either way."""
    turn = STYLES[style]
    rng = random.Random(SEED)
    by_session: dict[int, list[tuple[str, str, str | None, str]]] = {}
    for session, speaker, text, question, kind in FACTS:
        by_session.setdefault(session, []).append((speaker, text, question, kind))
    (root / "memory").mkdir(parents=True, exist_ok=True)
    _write(root / "MEMORY.md", f"# Memory\n\n- Chat logs between {A} and {B} live in memory/, one file per day.\n")
    queries: list[dict] = []
    multi = {}  # session -> [(question number, speaker, text)]
    for n, (_question, told) in enumerate(MULTI):
        for session, speaker, text in told:
            multi.setdefault(session, []).append((n, speaker, text))
    multi_rng = random.Random(SEED + 1)
    multi_lines: list[dict[str, list[list[int]]]] = [{} for _ in MULTI]
    day = FIRST_DAY
    for s in range(SESSIONS):
        day += dt.timedelta(days=rng.randint(2, 6))
        path = f"memory/{day.isoformat()}.md"
        lines = [f"# {day.isoformat()}", ""]
        turns = rng.randint(36, 70)
        planted = by_session.get(s, [])
        spots = sorted(rng.sample(range(4, turns - 2), len(planted)))
        minute = rng.randint(7 * 60, 20 * 60)
        speaker = rng.choice((A, B))
        k = 0
        for t in range(turns):
            minute += rng.randint(0, 4)
            if k < len(planted) and t == spots[k]:
                who, text, question, kind = planted[k]
                k += 1
                if question:
                    queries.append({"id": f"chat-{len(queries) + 1:02d}", "q": question, "targets": [path], "kind": kind,
                                    "lines": {path: [[len(lines) + 1, len(lines) + 1]]}})
                speaker = who
            else:
                speaker = speaker if rng.random() < 0.3 else (B if speaker == A else A)
                r = rng.random()
                if r < 0.45:
                    text = rng.choice(SHORT)
                elif r < 0.6:
                    text = rng.choice(QUESTIONS)
                else:
                    text = rng.choice(TOPICS) + rng.choice(TAILS)
                text = text[0].upper() + text[1:]
            lines.extend(turn(f"{minute // 60 % 24:02d}:{minute % 60:02d}", speaker, text).split("\n"))
        facts = {line for q in queries if path in q["lines"] for line, _ in q["lines"][path]}
        for n, who, text in multi.get(s, []):
            spot = multi_rng.choice([i for i, line in enumerate(lines, 1) if i > 2 and line and i not in facts])
            clock = lines[spot - 1][1:6] if style == "time" else ""
            lines[spot - 1] = turn(clock, who, text).split("\n")[0]
            facts.add(spot)
            multi_lines[n][path] = [[spot, spot]]
        _write(root / path, "\n".join(lines) + "\n")
    for n, (question, _told) in enumerate(MULTI):
        queries.append({"id": f"chat-m{n + 1}", "q": question, "targets": sorted(multi_lines[n]), "kind": "chat-multi",
                        "lines": multi_lines[n]})
    return queries


def _write(path: Path, text: str) -> None:
    """Write only when the text changed, so a rebuilt log leaves the index nothing to do."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except FileNotFoundError:
        pass
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[2])
    print(json.dumps(generate(Path(sys.argv[1])), ensure_ascii=False, indent=1))
