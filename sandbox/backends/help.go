package backends

// Help documents every spec Open takes and every setting each backend
// reads (what `otcurate help sandbox` prints).
const Help = `--sandbox SPEC chooses where sandboxes run; every command that runs them takes it
(run, build, filter, train, traces, sandbox gc). --docker-host is its deprecated
alias. Backends read their other settings from the environment, listed below.

SPEC forms:
  docker, or no --sandbox   the local Docker engine: DOCKER_HOST, else the default
                            socket (unix:///var/run/docker.sock)
  unix:///PATH              a Docker engine on a local socket
  tcp://HOST:PORT           a Docker engine over TCP (TLS with DOCKER_TLS_VERIFY)
  ssh://[USER@]HOST[:PORT]  a remote Docker engine through ssh, as docker -H ssh://
                            does: ssh HOST docker system dial-stdio, one multiplexed
                            ssh master per host; the far side needs sshd and the
                            docker CLI
  docker://ENDPOINT         the same as ENDPOINT (one of the three above);
                            docker://HOST:PORT means tcp://HOST:PORT
  HOST[=CAPACITY],...       a fleet of Docker engines (HOST as above, CAPACITY
                            concurrent sandboxes, default 4), e.g.
                            unix:///var/run/docker.sock=8,tcp://10.0.0.2:2376=16.
                            Each sandbox goes to the least-loaded engine below its
                            capacity; an engine that stops answering is out of
                            rotation for 30 s and its runs are retried elsewhere
  kube                      every sandbox a pod on Kubernetes (settings below)
  daytona                   the Daytona API (settings below)
  fake                      a TEST backend (package sandbox/fake): every sandbox is a
                            process tree in its own namespaces on an overlay of this
                            machine's root filesystem, running this machine's own
                            programs; FROM images are not pulled. It isolates nothing
                            and enforces no CPU/memory limit: for tests and dry runs
                            on trusted tasks, never for curation of untrusted pools.
                            Needs root.

Docker (docker, unix://, tcp://, ssh://, docker://, fleets):
  DOCKER_HOST                      the engine of "docker" (default: the local socket)
  DOCKER_TLS_VERIFY, DOCKER_CERT_PATH
                                   TLS for tcp:// engines (one set for every engine)
  DOCKER_API_VERSION               pin the Engine API version (default: negotiated)
  OTCURATE_SSH_FLAGS               extra ssh(1) flags for ssh:// engines, e.g.
                                   "-i /keys/fleet -o StrictHostKeyChecking=accept-new";
                                   keys, agents and jump hosts come from ssh's config

Kubernetes (kube): images are built by a Docker engine (DOCKER_HOST or the local
socket), then shipped to the cluster, by exactly one of:
  OTCURATE_KUBE_CONTAINERD=SOCKET  import into the node's containerd (single node;
                                   pods never pull)
  OTCURATE_KUBE_REGISTRY=PREFIX    push to PREFIX/otcurate-env:<hash>
  OTCURATE_KUBE_REGISTRY_USER, OTCURATE_KUBE_REGISTRY_PASSWORD
                                   the registry's credentials (default: anonymous)
The cluster:
  OTCURATE_KUBECONFIG              kubeconfig file (default: in-cluster, else
                                   KUBECONFIG or ~/.kube/config)
  OTCURATE_KUBE_NAMESPACE          namespace of the pods (default: the kubeconfig's,
                                   else default)
  OTCURATE_KUBE_REQUEST_RATIO      requests = this share of the limits (default 1)
  OTCURATE_KUBE_START_TIMEOUT      seconds a pod may stay pending (default 300)
Sandboxes without network get a deny-all NetworkPolicy (enforced where the CNI
implements NetworkPolicy). See deploy/README.md for sharded builds as an Indexed Job.

Daytona (daytona):
  DAYTONA_API_KEY                  the API key (required)
  DAYTONA_API_URL                  the API (default https://app.daytona.io/api)
  DAYTONA_TARGET                   the region, e.g. us (optional)

The sandbox helper (kube, daytona): a static program that kills the agent's processes,
reads the reward files and resets /tests and /logs/verifier inside a sandbox
instead of the image's bash, head and rm, which an agent can replace. make build
writes bin/otcurate-sandbox-helper-linux-{amd64,arm64} next to bin/otcurate.
  OTCURATE_SANDBOX_HELPER          the helper binary, or a directory holding
                                   otcurate-sandbox-helper-linux-ARCH (default:
                                   the directory of the otcurate executable)
Without it the backend warns at start-up, every result carries a warning, and
the image's tools are used. KillAll always puts a fresh copy into a new
directory with a random name (0700), so does any call after an exec; each copy
removes the previous one; the helper runs by absolute path with no shell, and
kills every process the agent started before it reads or writes anything.
  daytona  the copy goes through the toolbox's file API: no program of the image
           is involved.
  kube     the copy is written by the image's mkdir and install (its bytes
           through the exec's stdin): an agent that replaced those two can still
           substitute the helper. The node's kubernetes.io/arch picks the binary.
Not covered on either: an agent process still alive when KillAll starts can race
the fresh copy (find the new directory, swap the binary before it runs).

Fake (fake):
  OTCURATE_FAKE_DIR                image layers and sandbox state (default
                                   $TMPDIR/otcurate-fake)

Where the verifier runs (--verifier-sandbox, on run, build, filter, train and
traces):
  shared (default)  in the agent's sandbox, after every process the agent started
                    is killed; /tests and /logs/verifier are created afresh and the
                    reward is read from the host side. Not covered: test.sh runs
                    the image's bash, python3 and pytest as the agent left them, so
                    a tool the agent replaced can still decide the verdict.
  separate          once the agent is done, its work is collected, its sandbox
                    stopped, and test.sh runs in a fresh sandbox from the task
                    image holding only that work (one per session; repeats share
                    it). The work is what the agent changed below the workdir,
                    /app, /home, /root and /tmp: regular files, directories and
                    symlinks (kept as links), with modes and owners, and the
                    deletions of files the image had. Never carried: /usr, /bin,
                    /sbin, /lib*, /etc, /opt, /var, /boot, /run, /srv, /mnt,
                    /media, /proc, /sys, /dev, /logs, /tests, /solution, the
                    dot-entries at the top of a home (~/.local holds python's user
                    site-packages), FIFOs, sockets and devices. Work over 50,000
                    entries or 512 MiB scores 0. Not covered: code in the work
                    itself that the verifier runs or imports (a conftest.py in the
                    workdir); and a solution that needs packages the agent
                    installed into system paths fails (the image must hold them).
                    Supported by the Docker backend with the engine on this host
                    and this process root (changes come from the engine's diff,
                    contents are read through /proc/PID/root) and by fake; remote
                    engines, kube and daytona refuse it at startup. Costs one more
                    sandbox start per session (about 0.3 s on a local engine).

Every backend labels what it creates with the run id; "otcurate sandbox gc
--sandbox SPEC" removes what killed runs left behind.`
