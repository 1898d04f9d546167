package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"

	"github.com/moby/moby/client"
)

// The methods below let another backend (Kubernetes) use a Docker engine
// as its image builder: build there, then ship the image to the cluster.

// SaveImage streams the image as a `docker save` tar archive. The caller
// closes it.
func (d *Engine) SaveImage(ctx context.Context, ref string) (io.ReadCloser, error) {
	rc, err := d.cli.ImageSave(ctx, []string{ref})
	if err != nil {
		return nil, engineError(ctx, "save image "+ref, err)
	}
	return rc, nil
}

// PushImage tags ref as target and pushes target to its registry. user
// and password may be empty (an anonymous registry).
func (d *Engine) PushImage(ctx context.Context, ref, target, user, password string) error {
	if _, err := d.cli.ImageTag(ctx, client.ImageTagOptions{Source: ref, Target: target}); err != nil {
		return engineError(ctx, "tag image "+ref+" as "+target, err)
	}
	auth, _ := json.Marshal(map[string]string{"username": user, "password": password})
	resp, err := d.cli.ImagePush(ctx, target, client.ImagePushOptions{RegistryAuth: base64.URLEncoding.EncodeToString(auth)})
	if err != nil {
		return engineError(ctx, "push image "+target, err)
	}
	defer resp.Close()
	if err := resp.Wait(ctx); err != nil {
		return infraError("push image "+target, err)
	}
	return nil
}

// HasEntrypoint reports whether the image has an ENTRYPOINT (a sandbox
// then keeps it and watches it for an early exit).
func (d *Engine) HasEntrypoint(ctx context.Context, ref string) (bool, error) {
	return d.imageEntrypoint(ctx, ref)
}
