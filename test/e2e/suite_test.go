// Package e2e runs the joist binary, as users run it, against the full stack: kube-apiserver, etcd,
// kube-scheduler, kube-controller-manager and KWOK, with the KWOK cloud provider launching simulated
// nodes.
package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider/kwok"
	"github.com/joist-dev/joist/test/env"
)

// joistBinary is the manager under test: $JOIST_BINARY, or built once into a temporary folder.
var joistBinary string

func TestMain(m *testing.M) {
	env.DiscardLogs()
	os.Exit(env.RunWithManagerBinary(m, &joistBinary))
}

// stack is a running control plane plus a joist manager process that can be stopped and started again.
type stack struct {
	t    *testing.T
	env  *env.Env
	kube client.Client
	// its is the catalog the manager's kwok cloud serves (the binary's embedded default), for prices.
	its []*catalog.InstanceType
	// args are the manager's flags after env.StartManager's defaults; a test appends to them
	// before startManager (a flag given twice takes the last value).
	args    []string
	manager *env.Manager
	starts  int
}

// newStack starts the control plane; cloud's failure injection becomes the manager's --kwok-* flags
// (the binary serves its embedded catalog, so cloud.InstanceTypes must be nil or catalog.Default()).
func newStack(t *testing.T, cloud kwok.Options) *stack {
	t.Helper()
	scheme := env.DefaultScheme()
	e := env.New(t, env.Options{Scheduler: true, ControllerManager: true, KWOK: true, Scheme: scheme})
	e.Config.QPS, e.Config.Burst = 1000, 2000
	kube, err := client.New(e.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if cloud.Faults != (kwok.Faults{}) {
		t.Fatal("newStack: pass kwok fault flags through s.args")
	}
	var soldOut []string
	for _, o := range cloud.UnavailableOfferings {
		soldOut = append(soldOut, o.InstanceType+":"+o.Zone+":"+o.CapacityType)
	}
	args := []string{"--garbage-collection-period=5s", "--kwok-seed=" + strconv.FormatInt(cloud.Seed, 10),
		"--kwok-error-rate=" + strconv.FormatFloat(cloud.ErrorRate, 'g', -1, 64), "--kwok-sold-out-offerings=" + strings.Join(soldOut, ",")}
	if os.Getenv("JOIST_E2E_DEBUG") == "1" {
		args = append(args, "--zap-log-level=debug")
	}
	s := &stack{t: t, env: e, kube: kube, its: catalog.Default(), args: args}
	t.Cleanup(s.stopManager)
	return s
}

// startManager runs a fresh joist process, logging to joist-<n>.log in the environment's log
// folder (printed when the test fails). Its metrics are served for Manager.Metrics.
func (s *stack) startManager() {
	s.t.Helper()
	s.starts++
	m, err := s.env.StartManager(env.ManagerOptions{Binary: joistBinary, Args: s.args, Metrics: true,
		LogName: fmt.Sprintf("joist-%d.log", s.starts)})
	if err != nil {
		s.t.Fatal(err)
	}
	s.manager = m
}

// stopManager shuts the manager down as a rollout would (SIGTERM, then its graceful shutdown).
func (s *stack) stopManager() {
	if s.manager != nil {
		s.manager.Stop(time.Minute)
		s.manager = nil
	}
}

// ctx returns a context bounded by timeout, canceled at test end.
func (s *stack) ctx(timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	s.t.Cleanup(cancel)
	return ctx
}

func (s *stack) create(ctx context.Context, objs ...client.Object) {
	s.t.Helper()
	for _, o := range objs {
		if err := s.kube.Create(ctx, o); err != nil {
			s.t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// eventually polls cond every 250ms until it holds or ctx ends, failing the test with describe().
func (s *stack) eventually(ctx context.Context, what string, cond func(context.Context) (bool, error), describe func() string) {
	s.t.Helper()
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := s.env.CheckChildren(); err != nil {
			return false, err
		}
		if s.manager != nil {
			if err := s.manager.Err(); err != nil {
				return false, err
			}
		}
		return cond(ctx)
	})
	if err != nil {
		s.t.Fatalf("waiting for %s: %v\n%s", what, err, describe())
	}
}

// waitRunning waits until every pod matching labels runs on a Joist node; it returns the pods.
func (s *stack) waitRunning(ctx context.Context, want int, labels map[string]string) []corev1.Pod {
	s.t.Helper()
	var pods corev1.PodList
	running := 0
	s.eventually(ctx, fmt.Sprintf("%d pods Running", want), func(ctx context.Context) (bool, error) {
		if err := s.kube.List(ctx, &pods, client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		running = 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() {
				running++
			}
		}
		return running == want, nil
	}, func() string {
		return fmt.Sprintf("%d of %d pods running; %s\n%s", running, want, describePending(pods.Items), s.describeClaims())
	})
	return pods.Items
}

// describePending summarises up to five pods that are not running, with the scheduler's verdict.
func describePending(pods []corev1.Pod) string {
	out, n := "pending pods:", 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning || n == 5 {
			continue
		}
		n++
		out += fmt.Sprintf("\n  %s nominated=%q", p.Name, p.Status.NominatedNodeName)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				out += fmt.Sprintf(" scheduled=%s: %s", c.Status, c.Message)
			}
		}
	}
	return out
}

func (s *stack) claims() []v1.NodeClaim {
	list := &v1.NodeClaimList{}
	if err := s.kube.List(context.Background(), list); err != nil {
		s.t.Fatalf("listing nodeclaims: %v", err)
	}
	return list.Items
}

func (s *stack) describeClaims() string {
	out := "nodeclaims:"
	for _, nc := range s.claims() {
		out += fmt.Sprintf("\n  %s type=%s zone=%s ct=%s node=%s conditions=%v", nc.Name, nc.Labels[v1.LabelInstanceType],
			nc.Labels[v1.LabelTopologyZone], nc.Labels[v1.CapacityTypeLabelKey], nc.Status.NodeName, conditionSummary(nc))
	}
	return out
}

func conditionSummary(nc v1.NodeClaim) string {
	out := ""
	for _, c := range nc.Status.Conditions {
		out += fmt.Sprintf("%s=%s ", c.Type, c.Status)
	}
	return out
}

// priceOf returns the price of a launched claim's offering in the catalog (-1 when unknown).
func priceOf(its []*catalog.InstanceType, nc v1.NodeClaim) float64 {
	p, ok := catalog.OfferingPrice(its, nc.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelTopologyZone], nc.Labels[v1.CapacityTypeLabelKey])
	if !ok {
		return -1
	}
	return p
}

// kwokNodePool returns a NodePool with a KWOKNodeClass "default" and the given extra requirements.
func kwokNodePool(name string, limits corev1.ResourceList, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodePool {
	reqs = append([]v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}}, reqs...)
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodePoolSpec{
			Limits: v1.Limits(limits),
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				Requirements: reqs,
				NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.GroupVersion.Group, Kind: "KWOKNodeClass", Name: "default"},
				ExpireAfter:  v1.MustParseNillableDuration("Never"),
			}},
		},
	}
}

func kwokNodeClass(registrationDelay time.Duration) *kwokv1alpha1.KWOKNodeClass {
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: kwokv1alpha1.KWOKNodeClassSpec{ImageID: "kwok-image-v1"}}
	if registrationDelay > 0 {
		nc.Spec.RegistrationDelay = &metav1.Duration{Duration: registrationDelay}
	}
	return nc
}

// deployment returns a Deployment of replicas pods requesting cpu and memory.
func deployment(name string, replicas int32, cpu, memory string, mutate ...func(*corev1.PodSpec)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
			}},
		}},
		TerminationGracePeriodSeconds: ptr.To[int64](0),
	}
	for _, m := range mutate {
		m(&spec)
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// waitPoolsReady waits until the named NodePools' Ready condition is True.
func (s *stack) waitPoolsReady(ctx context.Context, names ...string) {
	s.t.Helper()
	s.eventually(ctx, fmt.Sprintf("NodePools %v Ready", names), func(ctx context.Context) (bool, error) {
		for _, name := range names {
			np := &v1.NodePool{}
			if err := s.kube.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			if !np.IsTrue(v1.ConditionTypeReady) {
				return false, nil
			}
		}
		return true, nil
	}, s.describeClaims)
}
