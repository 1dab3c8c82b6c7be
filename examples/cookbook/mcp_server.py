"""A minimal MCP server on stdio (JSON-RPC 2.0, one message per line): it
answers initialize, tools/list and tools/call of one tool, "echo".
Standard library only."""
import json
import sys

TOOLS = [{"name": "echo", "description": "Echo the text back",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]


def answer(msg):
    method = msg.get("method")
    if method == "initialize":
        return {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "cookbook-echo", "version": "1.0.0"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text = msg["params"]["arguments"]["text"]
        return {"content": [{"type": "text", "text": text}]}
    return None


for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue  # a notification (notifications/initialized)
    result = answer(msg)
    reply = {"jsonrpc": "2.0", "id": msg["id"]}
    if result is None:
        reply["error"] = {"code": -32601, "message": "method not found"}
    else:
        reply["result"] = result
    print(json.dumps(reply), flush=True)
