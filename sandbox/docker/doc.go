// Package docker is the sandbox.Backend on Docker engines: Engine drives
// one engine (the local socket, unix://, tcp:// or ssh://) through its Go
// API, and Fleet spreads sandboxes over several. Besides the contract it
// offers what the Kubernetes backend needs of an image builder
// (SaveImage, PushImage, HasEntrypoint) and what tests need to check for
// leftovers (Containers).
package docker
