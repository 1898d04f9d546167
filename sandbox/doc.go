// Package sandbox is the contract every sandbox backend implements:
// Backend builds environment images and starts Sandboxes, a Sandbox runs
// commands, moves files and opens terminals. The backends are peer
// packages (sandbox/docker, sandbox/kube, sandbox/daytona), opened from a
// spec by sandbox/backends; the Harbor verifier contract is built on top
// of this package in package trial. It also holds what every backend
// shares so that a sandbox means the same on all of them: the labels, the
// head/tail output capture, the user switch (AsUserArgv), the health wait
// (WaitHealthy) and the exec markers that let a timeout kill a whole
// process tree (NewExecMarker, KillScript).
//
// Errors are split in two classes that must never be confused: a
// *BuildError is a defect of the task (its Dockerfile fails or is too
// slow), while an *InfraError is a failure of the machine (engine down,
// disk full) and is retried, never recorded against the task.
package sandbox
