"""The Agent Completion module under test, as a harness target (`--target harness_target:run`)."""

import unicodedata

REQUIRED = "agentFinalAnswer is required at agent completion"
TOO_LONG = "agentFinalAnswer exceeds the supported length"


def is_blank(text):  # Java's String.isBlank(), not Python's str.strip()
    return all(
        c in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
        or (unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in "\xa0\u2007\u202f")
        for c in text
    )


def complete(state):
    answer = state.get("agentFinalAnswer")
    if not isinstance(answer, str) or is_blank(answer):
        raise ValueError(REQUIRED)
    if len(answer.encode("utf-16-le")) // 2 > 65_536:  # Java characters: UTF-16 code units
        raise ValueError(TOO_LONG)
    return {"finalAnswer": answer, "agentOutcome": "final_answer"}


def run(message):
    if message["type"] == "hello":
        return {"type": "hello", "protocol": 1, "name": "my completion", "kinds": ["completion"]}
    if message["type"] == "shutdown":
        return None
    executions = []
    for execution in message["executions"]:  # in order, through one module
        try:
            executions.append({"outputs": complete(execution["input"])})
        except ValueError as error:
            failure = {"type": "IllegalArgumentException", "code": "illegal_argument"}
            executions.append({"outputs": {}, "error": {**failure, "message": str(error)}})
    return {"type": "result", "id": message["id"], "executions": executions}
