"""Chat memory: a conversation remembered turn by turn, a question recalled, the hit read in context.

python examples/chat_memory.py
"""

import tempfile
from pathlib import Path

from perseus_vault_core import Vault

CHAT = [
    {
        "speaker": "Caroline",
        "text": "Hey Mel! I went to an LGBTQ support group yesterday.",
        "id": "d1-1",
        "time": "2023-05-08T13:56:00Z",
    },
    {
        "speaker": "Melanie",
        "text": "That's great, Caroline! What was it like?",
        "id": "d1-2",
        "time": "2023-05-08T13:57:00Z",
    },
    {
        "speaker": "Caroline",
        "text": "The transgender stories were so inspiring that I want to study counseling now.",
        "id": "d1-3",
        "time": "2023-05-08T13:58:00Z",
    },
    {
        "speaker": "Melanie",
        "text": "You would be a wonderful counselor. I finally painted that lake sunrise.",
        "id": "d1-4",
        "time": "2023-05-08T14:01:00Z",
    },
    {
        "speaker": "Caroline",
        "text": "I'd love to see it! Are you still going camping in June?",
        "id": "d1-5",
        "time": "2023-05-08T14:02:00Z",
    },
]

with Vault(Path(tempfile.mkdtemp()) / "chat.db") as vault:
    # A chat agent remembers each message as it comes: each becomes the session's next turn.
    for message in CHAT:
        vault.remember_conversation("caroline-and-melanie", [message])
    # Sending the whole log again changes nothing: the message ids are already there.
    again = vault.remember_conversation("caroline-and-melanie", CHAT)
    print(
        f"the log sent again: {again.unchanged} turns unchanged, {again.created} new; last turn {again.last_turn}"
    )
    assert again.unchanged == len(CHAT) and again.created == 0

    # Later, a question: recall finds the turn (by its words and its speaker), like any memory.
    hit = vault.recall("What does Caroline want to study?", category="conversation", limit=1).items[0]
    print(f"\nrecalled #{hit.id}, turn {hit.body['turn']}: {hit.summary}: {hit.content}")
    assert hit.body["turn"] == 3

    # Read the hit in its context: the turn before and the turn after it.
    window = vault.conversation("caroline-and-melanie", around=hit.id, before=1, after=1)
    print(f"\nturns {window.turns[0].turn} to {window.turns[-1].turn} of {window.total}:")
    for t in window.turns:
        mark = ">" if t.entity.id == hit.id else " "
        print(f"{mark} {t.turn} {t.speaker}: {t.entity.content}")
    assert [t.turn for t in window.turns] == [2, 3, 4]
