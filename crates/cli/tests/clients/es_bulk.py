"""Sends documents with the official Elasticsearch Python client's bulk helper.

Reads a JSON job on stdin: {"url", "headers", "index", "docs": [...]}. Calls
`info()` first (the start-up call; it also exercises the client's product
check), then `helpers.bulk` with `raise_on_error=False`, and prints
{"version", "ok", "errors": [item, ...]} as JSON.
"""
import json
import sys

from elasticsearch import Elasticsearch, helpers


def main():
    job = json.load(sys.stdin)
    es = Elasticsearch(job["url"], headers=job.get("headers") or {}, request_timeout=30)
    info = es.info()
    actions = ({"_index": job["index"], "_source": doc} for doc in job["docs"])
    ok, errors = helpers.bulk(es, actions, raise_on_error=False, chunk_size=job.get("chunk_size", 500))
    print(json.dumps({"version": info["version"]["number"], "ok": ok, "errors": errors}))


if __name__ == "__main__":
    main()
