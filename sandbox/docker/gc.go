package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/otcurate/otcurate/sandbox"
)

// GC removes what otcurate runs left behind, found by label: containers
// (running or not), networks and, with opts.Images, built images. Objects
// of opts.ExceptRun are kept; with opts.Run, only that run's objects
// are touched. It goes on after a failed removal and returns every failure
// joined.
func (d *Engine) GC(ctx context.Context, opts sandbox.GCOptions) (sandbox.GCReport, error) {
	var rep sandbox.GCReport
	var errs []error
	keep := func(labels map[string]string) bool {
		run := labels[sandbox.LabelRun]
		if opts.OrphansOnly && sandbox.OwnerAlive(labels[sandbox.LabelOwner]) {
			return true
		}
		return (opts.ExceptRun != "" && run == opts.ExceptRun) || (opts.Run != "" && run != opts.Run)
	}
	filters := labelFilter(sandbox.LabelTool, "1")
	if opts.Run != "" {
		filters = filters.Add("label", sandbox.LabelRun+"="+opts.Run)
	}

	containers, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
	if err != nil {
		return rep, engineError(ctx, "gc: list containers", err)
	}
	for _, c := range containers.Items {
		if keep(c.Labels) {
			continue
		}
		if err := removeContainer(ctx, d.cli, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", shortID(c.ID), err))
			continue
		}
		rep.Containers = append(rep.Containers, shortID(c.ID)+" "+strings.Join(c.Names, ","))
	}

	networks, err := d.cli.NetworkList(ctx, client.NetworkListOptions{Filters: filters})
	if err != nil {
		return rep, engineError(ctx, "gc: list networks", err)
	}
	for _, n := range networks.Items {
		if keep(n.Labels) {
			continue
		}
		if _, err := d.cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("network %s: %w", n.Name, err))
			continue
		}
		rep.Networks = append(rep.Networks, n.Name)
	}

	if opts.Images {
		removed, imgErrs, err := d.gcImages(ctx, filters, keep)
		if err != nil {
			return rep, err
		}
		rep.Images, errs = removed, append(errs, imgErrs...)
	}
	d.log.Info("gc done", "containers", len(rep.Containers), "networks", len(rep.Networks),
		"images", len(rep.Images), "errors", len(errs))
	if len(errs) > 0 {
		return rep, engineError(ctx, "gc", errors.Join(errs...))
	}
	return rep, nil
}

// Containers lists the containers of a run, stopped ones included, as
// "<short id> <name> <state>": what GC would remove, or what a test left
// behind.
func (d *Engine) Containers(ctx context.Context, run string) ([]string, error) {
	res, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: labelFilter(sandbox.LabelTool, "1").Add("label", sandbox.LabelRun+"="+run)})
	if err != nil {
		return nil, engineError(ctx, "list containers of run "+run, err)
	}
	out := make([]string, 0, len(res.Items))
	for _, c := range res.Items {
		out = append(out, fmt.Sprintf("%s %s %s", shortID(c.ID), strings.Join(c.Names, ","), c.State))
	}
	return out, nil
}

// gcImages removes the built images selected by filters and keep, with
// their untagged parent layers.
func (d *Engine) gcImages(ctx context.Context, filters client.Filters, keep func(map[string]string) bool) (removed []string, errs []error, err error) {
	images, err := d.cli.ImageList(ctx, client.ImageListOptions{Filters: filters})
	if err != nil {
		return nil, nil, engineError(ctx, "gc: list images", err)
	}
	for _, img := range images.Items {
		if keep(img.Labels) {
			continue
		}
		name := shortID(img.ID)
		if len(img.RepoTags) > 0 {
			name = strings.Join(img.RepoTags, ",")
		}
		_, err := d.cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("image %s: %w", name, err))
			continue
		}
		removed = append(removed, name)
	}
	return removed, errs, nil
}
