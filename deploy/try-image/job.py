#!/usr/bin/env python3
"""One container of a Kubernetes Job manifest, as `buildah run` arguments, for
deploy/try-image.sh: the container's command, its environment (values as written, Secrets and
ConfigMaps looked up in what the script gives), its volume mounts bound to host folders, and
the pod's user. The manifest is read as Kubernetes would read it, so the script plays exactly
what deploy/kubernetes says.

    job.py FILE CONTAINER [--volume NAME=DIR]... [--secret SECRET/KEY=VALUE]... [--set NAME=VALUE]...

prints NUL-separated `buildah run` options, then `--`, then the command. `--set` replaces what
the manifest says for a variable (`value`, or an absent one) — what a person fills in.
"""

import sys

import yaml


def main(argv):
    path, name, rest = argv[0], argv[1], argv[2:]
    volumes, secrets, sets = {}, {}, {}
    for flag, value in zip(rest[::2], rest[1::2]):
        key, _, val = value.partition("=")
        {"--volume": volumes, "--secret": secrets, "--set": sets}[flag][key] = val
    with open(path, encoding="utf-8") as f:
        job = yaml.safe_load(f)
    pod = job["spec"]["template"]["spec"]
    containers = pod.get("initContainers", []) + pod["containers"]
    matches = [c for c in containers if c["name"] == name]
    if not matches:
        sys.exit("job.py: %s has no container named %s" % (path, name))
    container = matches[0]
    out = []
    security = pod.get("securityContext", {})
    if "runAsUser" in security:
        out += ["--user", "%s:%s" % (security["runAsUser"], security.get("runAsGroup", 0))]
    given = set()
    for env in container.get("env", []):
        var = env["name"]
        if var in sets:
            value = sets[var]
        elif "value" in env:
            value = env["value"]
        else:
            ref = env["valueFrom"].get("secretKeyRef") or env["valueFrom"]["configMapKeyRef"]
            value = secrets.get("%s/%s" % (ref["name"], ref["key"]))
            if value is None:
                sys.exit("job.py: %s needs %s/%s: give --secret" % (var, ref["name"], ref["key"]))
        given.add(var)
        out += ["--env", "%s=%s" % (var, value)]
    for var, value in sets.items():
        if var not in given:
            out += ["--env", "%s=%s" % (var, value)]
    pod_volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        if mount["name"] not in pod_volumes:
            sys.exit("job.py: %s mounts %s, which the pod lacks" % (name, mount["name"]))
        host = volumes.get(mount["name"])
        if host is None:
            sys.exit("job.py: give --volume %s=DIR" % mount["name"])
        ro = ":ro" if mount.get("readOnly") else ""
        # In Debian's images /var/run is a link to /run; a container runtime binds through it,
        # buildah's chroot isolation does not (the bind is lost), so it is given the target.
        path = mount["mountPath"]
        if path.startswith("/var/run/"):
            path = path[len("/var") :]
        out += ["--volume", "%s:%s%s" % (host, path, ro)]
    out.append("--")
    out += container.get("command", []) + container.get("args", [])
    sys.stdout.write("\0".join(out) + "\0")


main(sys.argv[1:])
