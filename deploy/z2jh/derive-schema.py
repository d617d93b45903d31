#!/usr/bin/env python3
"""Derive deploy/z2jh/chart-schema.yaml: the part of the Zero to JupyterHub chart's values schema
that covers exactly the keys deploy/z2jh/values.yaml sets.

    deploy/z2jh/derive-schema.py CHART_VALUES_SCHEMA_YAML CHART_VERSION SOURCE > deploy/z2jh/chart-schema.yaml

CHART_VALUES_SCHEMA_YAML is jupyterhub/values.schema.yaml of the chart's repository
(jupyterhub/zero-to-jupyterhub-k8s) at the tag CHART_VERSION; SOURCE says where it came from (put
in the header). Needs PyYAML. Run it again when the chart version changes, then `go test
./deploy/z2jh/`.

What is kept, for each key set in values.yaml: type, enum, minimum, items, the key's entry in
properties, or the patternProperties entry that matched it, and additionalProperties (false: the
chart knows no other key there). Descriptions are dropped; so are required (Helm checks the chart's
defaults merged with these values, and the defaults hold the required keys) and the chart's
if/then/oneOf rules (on keys this file does not set). Where the chart allows any key
(additionalProperties true, e.g. hub.config.<Class>), the derivation stops: those keys are
KubeSpawner's and JupyterHub's, checked by kubespawner-traits.yaml.
"""
import re
import sys

import yaml

KEEP = ("type", "enum", "minimum", "items", "additionalProperties")


def prune(schema, value):
    out = {k: schema[k] for k in KEEP if k in schema}
    if isinstance(out.get("items"), dict):
        out["items"] = {k: v for k, v in out["items"].items() if k in KEEP}
    if not isinstance(value, dict):
        return out
    props, patterns = {}, {}
    for key, sub in value.items():
        if key in schema.get("properties", {}):
            props[key] = prune(schema["properties"][key], sub)
            continue
        for pattern, pschema in schema.get("patternProperties", {}).items():
            if re.search(pattern, key):
                free = pschema.get("additionalProperties") is True
                patterns[pattern] = prune(pschema, None if free else sub)
                break
        else:
            extra = schema.get("additionalProperties")
            if extra is not True and not isinstance(extra, dict):
                sys.exit(f"derive-schema: {key}: not a key the chart's schema documents")
    if props:
        out["properties"] = props
    if patterns:
        out["patternProperties"] = patterns
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    schema_path, version, source = sys.argv[1:]
    with open(schema_path) as f:
        schema = yaml.safe_load(f)
    values_path = __file__.rsplit("/", 1)[0] + "/values.yaml" if "/" in __file__ else "values.yaml"
    with open(values_path) as f:
        values = yaml.safe_load(f)
    derived = prune(schema, values)
    print(f"""# deploy/z2jh/chart-schema.yaml — derived by deploy/z2jh/derive-schema.py; do not edit by hand.
# The values schema of the Zero to JupyterHub Helm chart "jupyterhub", version {version}:
# jupyterhub/values.schema.yaml of {source},
# pruned to the keys deploy/z2jh/values.yaml sets (descriptions, required, if/then/oneOf dropped).
# go test ./deploy/z2jh/ checks values.yaml against it.
chart: jupyterhub
chartVersion: {version}
source: {source}
schema:""")
    body = yaml.safe_dump(derived, sort_keys=False, default_flow_style=False, width=100)
    print("\n".join("  " + line for line in body.rstrip("\n").split("\n")))


if __name__ == "__main__":
    main()
