# Verify a Keel audit export offline: python3 verify-audit.py EXPORT.json [HEAD_HASH]
import hashlib, json, sys
x, prev, ok = json.load(open(sys.argv[1])), "", True
for i, e in enumerate(x["events"]):
    if not e["hash"] and not prev: continue  # written before the chain existed
    doc = {k: e[k] for k in ("data", "operation_id", "plan_item_id", "time", "type")}
    doc.update(prev_hash=prev, run_id=x["run_id"])
    h = hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
    if e["seq"] != i + 1 or e["prev_hash"] != prev or e["hash"] != h:
        print("seq", e["seq"], "does not match the chain"); ok = False
    prev = e["hash"]
ok = ok and prev == x["head"]["hash"] and len(x["events"]) == x["head"]["seq"]
ok = ok and (len(sys.argv) < 3 or sys.argv[2] in [e["hash"] for e in x["events"]])  # a head kept elsewhere
print("head", x["head"]["seq"], prev, "verified" if ok else "TAMPERED"); sys.exit(0 if ok else 1)
