// Package controllers wires every Joist controller into a manager, with explicit constructor
// arguments; no controller registers itself.
package controllers

import (
	"context"
	"fmt"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/disruption"
	"github.com/joist-dev/joist/controllers/garbagecollection"
	"github.com/joist-dev/joist/controllers/guardrail"
	"github.com/joist-dev/joist/controllers/indexes"
	nodemetrics "github.com/joist-dev/joist/controllers/metrics/node"
	nodeclaimmetrics "github.com/joist-dev/joist/controllers/metrics/nodeclaim"
	nodepoolmetrics "github.com/joist-dev/joist/controllers/metrics/nodepool"
	podmetricsctrl "github.com/joist-dev/joist/controllers/metrics/pod"
	"github.com/joist-dev/joist/controllers/nodeclaim"
	"github.com/joist-dev/joist/controllers/nodepool"
	"github.com/joist-dev/joist/controllers/nomination"
	"github.com/joist-dev/joist/controllers/podmetrics"
	"github.com/joist-dev/joist/controllers/provisioning"
	"github.com/joist-dev/joist/controllers/state"
	"github.com/joist-dev/joist/controllers/termination"
)

// Options holds each controller's options.
type Options struct {
	Provisioning      provisioning.Options
	Nomination        nomination.Options
	NodeClaim         nodeclaim.Options
	Termination       termination.Options
	GarbageCollection garbagecollection.Options
	Disruption        disruption.Options
	Guardrail         guardrail.Options
}

// DefaultOptions returns every controller's defaults.
func DefaultOptions() Options {
	return Options{
		Provisioning:      provisioning.DefaultOptions(),
		Nomination:        nomination.DefaultOptions(),
		NodeClaim:         nodeclaim.DefaultOptions(),
		Termination:       termination.DefaultOptions(),
		GarbageCollection: garbagecollection.DefaultOptions(),
		Disruption:        disruption.DefaultOptions(),
		Guardrail:         guardrail.DefaultOptions(),
	}
}

// Register adds the field indexes and every controller to mgr.
func Register(ctx context.Context, mgr ctrl.Manager, cloud cloudprovider.CloudProvider, clk clock.WithTicker, opts Options) error {
	if err := indexes.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	kube := mgr.GetClient()
	recorder := mgr.GetEventRecorder("joist")
	// The nomination controller re-plans through the provisioner, which records its plans with it.
	var provisioner *provisioning.Provisioner
	nominations := nomination.New(kube, mgr.GetCache(), state.NewNominations(), func() { provisioner.Trigger() }, clk, opts.Nomination)
	provisioner = provisioning.New(kube, mgr.GetCache(), cloud, nominations, recorder, clk, opts.Provisioning)
	if err := mgr.Add(provisioner); err != nil {
		return fmt.Errorf("adding provisioner: %w", err)
	}
	if err := nominations.Register(mgr); err != nil {
		return fmt.Errorf("registering nomination controller: %w", err)
	}
	unavailable := cloudprovider.UnavailableOfferingsOf(cloud)
	if err := nodeclaim.New(kube, cloud, unavailable, recorder, clk, opts.NodeClaim).Register(mgr); err != nil {
		return fmt.Errorf("registering nodeclaim lifecycle controller: %w", err)
	}
	if err := termination.New(kube, cloud, recorder, clk, opts.Termination).Register(mgr); err != nil {
		return fmt.Errorf("registering termination controller: %w", err)
	}
	if err := disruption.New(kube, mgr.GetAPIReader(), cloud, provisioner, nominations, recorder, clk, opts.Disruption).Register(mgr); err != nil {
		return fmt.Errorf("registering disruption controller: %w", err)
	}
	if err := nodepool.New(kube).Register(mgr); err != nil {
		return fmt.Errorf("registering nodepool status controller: %w", err)
	}
	if err := guardrail.New(kube, cloud.GetInstanceTypes, recorder, clk, opts.Guardrail).Register(mgr); err != nil {
		return fmt.Errorf("registering guardrail report controller: %w", err)
	}
	if err := mgr.Add(garbagecollection.New(kube, mgr.GetCache(), cloud, clk, opts.GarbageCollection)); err != nil {
		return fmt.Errorf("adding garbage collector: %w", err)
	}
	if r, ok := cloudprovider.As[cloudprovider.ControllerRegistrar](cloud); ok {
		if err := r.RegisterControllers(ctx, mgr); err != nil {
			return fmt.Errorf("registering %s provider controllers: %w", cloud.Name(), err)
		}
	}
	if err := podmetrics.Register(kube, mgr.GetCache()); err != nil {
		return err
	}
	return registerMetrics(mgr, cloud, clk)
}

// registerMetrics adds the loops that keep the node, nodeclaim, nodepool and pod series.
func registerMetrics(mgr ctrl.Manager, cloud cloudprovider.CloudProvider, clk clock.PassiveClock) error {
	kube := mgr.GetClient()
	if err := nodemetrics.New(kube, cloud.GetInstanceTypes, clk).Register(mgr); err != nil {
		return fmt.Errorf("registering node metrics controller: %w", err)
	}
	if err := nodeclaimmetrics.New(kube, clk).Register(mgr); err != nil {
		return fmt.Errorf("registering nodeclaim metrics controller: %w", err)
	}
	if err := nodepoolmetrics.New(kube, cloud.GetInstanceTypes).Register(mgr); err != nil {
		return fmt.Errorf("registering nodepool metrics controller: %w", err)
	}
	if err := podmetricsctrl.New(kube, clk).Register(mgr); err != nil {
		return fmt.Errorf("registering pod metrics controller: %w", err)
	}
	return nil
}
