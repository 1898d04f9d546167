// Package sandbox runs task environments in isolated containers. Backend
// is the interface every engine implements (Docker today; Kubernetes and
// hosted APIs later); the Harbor verifier contract is built on top of it in
// package trial.
//
// Errors are split in two classes that must never be confused: a
// *BuildError is a defect of the task (its Dockerfile fails or is too
// slow), while an *InfraError is a failure of the machine (engine down,
// disk full) and is retried, never recorded against the task.
package sandbox
