package reliability

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider/kwok"
)

// inventory compares what the cloud runs with the NodeClaims that account for it.
type inventory struct {
	claims, instances int
	// duplicates are instances of a claim beyond its first (a booting record whose Node also exists,
	// or two Nodes with one provider ID).
	duplicates int
	// leaked are instances no NodeClaim accounts for; stuck are claims not Initialized.
	leaked, stuck []string
	// emptyNodes run no pod: capacity launched twice for the same pods shows up here.
	emptyNodes int
}

func (i inventory) String() string {
	return fmt.Sprintf("claims=%d instances=%d duplicates=%d leaked=%d stuck=%d emptyNodes=%d",
		i.claims, i.instances, i.duplicates, len(i.leaked), len(i.stuck), i.emptyNodes)
}

func (s *stack) inventory(ctx context.Context) (inventory, error) {
	var (
		inv     inventory
		claims  v1.NodeClaimList
		nodes   corev1.NodeList
		booting kwokv1alpha1.KWOKInstanceList
		pods    corev1.PodList
	)
	for _, l := range []client.ObjectList{&claims, &nodes, &booting, &pods} {
		if err := s.kube.List(ctx, l); err != nil {
			return inv, err
		}
	}
	claimByName := map[string]*v1.NodeClaim{}
	for i := range claims.Items {
		nc := &claims.Items[i]
		claimByName[nc.Name] = nc
		if nc.DeletionTimestamp.IsZero() && !nc.IsTrue(v1.ConditionTypeInitialized) {
			inv.stuck = append(inv.stuck, nc.Name)
		}
	}
	inv.claims = len(claims.Items)
	podsOn := map[string]int{}
	for _, p := range pods.Items {
		podsOn[p.Spec.NodeName]++
	}
	perProviderID := map[string]int{}
	account := func(name, providerID string) {
		inv.instances++
		perProviderID[providerID]++
		if nc, ok := claimByName[name]; !ok || (nc.Status.ProviderID != "" && nc.Status.ProviderID != providerID) {
			inv.leaked = append(inv.leaked, name)
		}
	}
	for _, n := range nodes.Items {
		if _, managed := n.Labels[kwok.ManagedLabelKey]; !managed || !n.DeletionTimestamp.IsZero() {
			continue
		}
		account(n.Name, n.Spec.ProviderID)
		if podsOn[n.Name] == 0 {
			inv.emptyNodes++
		}
	}
	for _, b := range booting.Items {
		if b.DeletionTimestamp.IsZero() {
			account(b.Name, kwok.ProviderIDPrefix+b.Name)
		}
	}
	for _, n := range perProviderID {
		inv.duplicates += n - 1
	}
	return inv, nil
}

// settle waits (up to timeout) for no leaked instance and no stuck claim: the garbage collector has
// a grace period, and claims initialize a moment after their pods run.
func (s *stack) settle(ctx context.Context, timeout time.Duration) (inventory, error) {
	deadline := time.Now().Add(timeout)
	for {
		inv, err := s.inventory(ctx)
		if err == nil && inv.duplicates == 0 && len(inv.leaked) == 0 && len(inv.stuck) == 0 {
			return inv, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("not settled after %s: %s (leaked %s; stuck %s)", timeout, inv,
					strings.Join(inv.leaked, ","), strings.Join(inv.stuck, ","))
			}
			return inv, err
		}
		time.Sleep(time.Second)
	}
}
