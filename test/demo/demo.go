package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/test/env"
)

type demo struct {
	env  *env.Env
	root string
	its  []*catalog.InstanceType
}

// readObjects decodes every document of the YAML files.
func (d *demo) readObjects(paths ...string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(d.root, p))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("decoding %s: %w", p, err)
			}
			if len(u.Object) > 0 {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

func (d *demo) apply(ctx context.Context, paths ...string) error {
	objs, err := d.readObjects(paths...)
	if err != nil {
		return err
	}
	for _, u := range objs {
		if err := d.env.Client.Create(ctx, u); err != nil {
			return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// waitWebhooks waits until the manager's admission webhooks answer (a dry-run NodePool create passes
// through them).
func (d *demo) waitWebhooks(ctx context.Context) error {
	objs, err := d.readObjects("config/samples/karpenter_v1_nodepool_kwok.yaml")
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		probe := objs[0].DeepCopy()
		probe.SetName("webhook-probe")
		err := d.env.Client.Create(ctx, probe, client.DryRunAll)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("joist's webhooks did not come up: %w", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// showRejection applies an unsafe NodePool and prints what the guardrail webhook answers.
func (d *demo) showRejection(ctx context.Context, path string) {
	say("applying an unsafe NodePool (%s) — Joist's guardrails should refuse it:", path)
	err := d.apply(ctx, path)
	if err == nil {
		say("  !! it was accepted: the guardrail webhooks are not active")
		return
	}
	for _, line := range strings.Split(err.Error(), "; ") {
		fmt.Println("    " + line)
	}
}

func (d *demo) scale(ctx context.Context, replicas map[string]int32) error {
	for name, n := range replicas {
		dep := &appsv1.Deployment{}
		if err := d.env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, dep); err != nil {
			return fmt.Errorf("getting deployment %s: %w", name, err)
		}
		patch := client.MergeFrom(dep.DeepCopy())
		dep.Spec.Replicas = &n
		if err := d.env.Client.Patch(ctx, dep, patch); err != nil {
			return fmt.Errorf("scaling deployment %s: %w", name, err)
		}
	}
	return nil
}

// snapshot is what the progress display shows.
type snapshot struct {
	pending, running int
	claims           map[string]int // "type zone capacity-type" → count
	nodes, ready     int
	// disrupting counts nodes carrying the karpenter.sh/disrupted taint: a command is in flight.
	disrupting  int
	costPerHour float64
	// oldImage counts launched claims not on the NodeClass image the demo switched to.
	oldImage int
}

func (d *demo) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{claims: map[string]int{}}
	pods := &corev1.PodList{}
	if err := d.env.Client.List(ctx, pods, client.InNamespace("default")); err != nil {
		return s, err
	}
	for _, p := range pods.Items {
		switch {
		case p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero():
			s.running++
		case p.Spec.NodeName == "" && p.DeletionTimestamp.IsZero():
			s.pending++
		}
	}
	nodes := &corev1.NodeList{}
	if err := d.env.Client.List(ctx, nodes); err != nil {
		return s, err
	}
	for _, n := range nodes.Items {
		for _, t := range n.Spec.Taints {
			if t.MatchTaint(&v1.DisruptedNoScheduleTaint) {
				s.disrupting++
			}
		}
	}
	claims := &v1.NodeClaimList{}
	if err := d.env.Client.List(ctx, claims); err != nil {
		return s, err
	}
	if d.its == nil {
		d.its = catalog.Default()
	}
	for _, nc := range claims.Items {
		it, zone, ct := nc.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelTopologyZone], nc.Labels[v1.CapacityTypeLabelKey]
		if it == "" {
			it = "(launching)"
		}
		s.claims[fmt.Sprintf("%-22s %-12s %-10s", it, zone, ct)]++
		s.nodes++
		if nc.Status.ImageID != "" && nc.Status.ImageID != "kwok-image-v2" {
			s.oldImage++
		}
		if nc.IsTrue(v1.ConditionTypeReady) {
			s.ready++
		}
		p, _ := catalog.OfferingPrice(d.its, it, zone, ct)
		s.costPerHour += p
	}
	return s, nil
}

// watchUntil prints progress every second until done holds (then returns), the timeout passes
// (0: none) or ctx ends.
func (d *demo) watchUntil(ctx context.Context, timeout time.Duration, done func(snapshot) bool) error {
	start := time.Now()
	last := ""
	for {
		if err := d.env.CheckChildren(); err != nil {
			return err
		}
		s, err := d.snapshot(ctx)
		if ctx.Err() != nil {
			return ctx.Err() // --duration or Ctrl-C: the step did not finish
		}
		if err != nil {
			return err
		}
		if view := render(s); view != last {
			fmt.Printf("%s  +%4.1fs\n%s", time.Now().Format("15:04:05"), time.Since(start).Seconds(), view)
			last = view
		}
		if done != nil && done(s) {
			return nil
		}
		if timeout > 0 && time.Since(start) > timeout {
			say("still waiting after %s; moving on", timeout)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func render(s snapshot) string {
	var b strings.Builder
	disrupting := ""
	if s.disrupting > 0 {
		disrupting = fmt.Sprintf(", %d being disrupted", s.disrupting)
	}
	fmt.Fprintf(&b, "    pods: %d pending, %d running | nodeclaims: %d (%d ready%s) | $%.4f/hour\n", s.pending, s.running, s.nodes, s.ready, disrupting, s.costPerHour)
	keys := make([]string, 0, len(s.claims))
	for k := range s.claims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "      %3d × %s\n", s.claims[k], k)
	}
	return b.String()
}
