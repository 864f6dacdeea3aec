package deploy

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
	"github.com/joist-dev/joist/test/env"
)

// ec2NodeClass is the NodeClass the pools use: the fake's cluster "prod" (test/awsstack's).
const ec2NodeClass = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  instanceProfile: KarpenterNodeInstanceProfile-prod
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: prod}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: prod}}]
`

// olmNamespace is the OperatorGroup's namespace the operator is installed into.
const olmNamespace = "operators"

// olmWebhookConfigs writes the webhook configurations OLM v0 creates from a CSV's
// webhookdefinitions (one configuration per definition, named after it, calling the
// "<deployment>-service" Service on the definition's containerPort and path; an AllNamespaces
// OperatorGroup selects every namespace) into a file envtest installs, pointing them at its local
// serving address and CA bundle.
func olmWebhookConfigs(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion) string {
	t.Helper()
	var docs [][]byte
	for _, d := range csv.Spec.WebhookDefinitions {
		cc := admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: olmNamespace, Name: d.DeploymentName + "-service", Path: d.WebhookPath, Port: ptr.To(d.ContainerPort)}}
		meta := metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1"}
		var obj any
		switch d.Type {
		case operatorsv1alpha1.MutatingAdmissionWebhook:
			meta.Kind = "MutatingWebhookConfiguration"
			obj = admissionregistrationv1.MutatingWebhookConfiguration{TypeMeta: meta, ObjectMeta: metav1.ObjectMeta{Name: d.GenerateName},
				Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: d.GenerateName, ClientConfig: cc, Rules: d.Rules,
					FailurePolicy: d.FailurePolicy, MatchPolicy: d.MatchPolicy, ObjectSelector: d.ObjectSelector, SideEffects: d.SideEffects,
					TimeoutSeconds: d.TimeoutSeconds, AdmissionReviewVersions: d.AdmissionReviewVersions, ReinvocationPolicy: d.ReinvocationPolicy}}}
		case operatorsv1alpha1.ValidatingAdmissionWebhook:
			meta.Kind = "ValidatingWebhookConfiguration"
			obj = admissionregistrationv1.ValidatingWebhookConfiguration{TypeMeta: meta, ObjectMeta: metav1.ObjectMeta{Name: d.GenerateName},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: d.GenerateName, ClientConfig: cc, Rules: d.Rules,
					FailurePolicy: d.FailurePolicy, MatchPolicy: d.MatchPolicy, ObjectSelector: d.ObjectSelector, SideEffects: d.SideEffects,
					TimeoutSeconds: d.TimeoutSeconds, AdmissionReviewVersions: d.AdmissionReviewVersions}}}
		default:
			t.Fatalf("webhookdefinition %s has type %s", d.GenerateName, d.Type)
		}
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, data)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "webhooks.yaml"), bytes.Join(docs, []byte("---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// bundleCRDs copies the bundle's CRD manifests into a folder envtest installs, as OLM does first.
func bundleCRDs(t *testing.T, b *manifests.Bundle) string {
	t.Helper()
	dir := t.TempDir()
	for _, crd := range b.V1CRDs {
		data, err := os.ReadFile(filepath.Join(repoRoot(t), "bundle", "manifests", crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml"))
		if err != nil {
			t.Fatalf("CRD %s: %v", crd.Name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, crd.Name+".yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// installCSVPermissions creates what OLM creates for the install strategy: the ServiceAccount of
// each permissions entry, a Role and RoleBinding in the install namespace for permissions, and a
// ClusterRole and ClusterRoleBinding for clusterPermissions.
func installCSVPermissions(t *testing.T, ctx context.Context, kube client.Client, spec operatorsv1alpha1.StrategyDetailsDeployment) {
	t.Helper()
	create := func(o client.Object) {
		t.Helper()
		if err := kube.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	accounts := map[string]bool{}
	account := func(name string) {
		if !accounts[name] {
			accounts[name] = true
			create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: olmNamespace}})
		}
	}
	subject := func(sa string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: olmNamespace}}
	}
	for i, p := range spec.Permissions {
		account(p.ServiceAccountName)
		name := fmt.Sprintf("joist-%s-%d", p.ServiceAccountName, i)
		create(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: olmNamespace}, Rules: p.Rules})
		create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: olmNamespace}, Subjects: subject(p.ServiceAccountName),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}})
	}
	for i, p := range spec.ClusterPermissions {
		account(p.ServiceAccountName)
		name := fmt.Sprintf("joist-%s-cluster-%d", p.ServiceAccountName, i)
		create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules})
		create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject(p.ServiceAccountName),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}})
	}
}

// impersonatingKubeconfig is a kubeconfig for the test apiserver that acts as the ServiceAccount
// (impersonation, so the apiserver's RBAC authorizer decides every request by its grants alone).
func impersonatingKubeconfig(t *testing.T, e *env.Env, sa string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{ClientCertificateData: e.Config.CertData, ClientKeyData: e.Config.KeyData, Token: e.Config.BearerToken,
		Impersonate:       "system:serviceaccount:" + olmNamespace + ":" + sa,
		ImpersonateGroups: []string{"system:serviceaccounts", "system:serviceaccounts:" + olmNamespace, "system:authenticated"}}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "sa"}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestCSVInstallStrategy does with bundle/'s CSV what OLM v0 does with a registry+v1 bundle — its
// CRDs, its ServiceAccount with Roles/ClusterRoles and bindings from permissions and
// clusterPermissions, webhook configurations from webhookdefinitions with a CA bundle — and runs the
// real manager binary with the Deployment's container arguments and environment (plus docs/aws.md's
// Subscription env, and EC2 served by the HTTP-level fake) as that ServiceAccount. With those permissions alone it becomes ready, leads, reconciles a NodePool
// (hash stamped, status and conditions written) and its EC2NodeClass (Ready), serves admission (a NodePool without limits is
// denied with the guardrail's message), may update nodepools/finalizers (which NodeClaims' owner
// references need on OpenShift), and logs no forbidden request.
func TestCSVInstallStrategy(t *testing.T) {
	b, err := manifests.GetBundleFromDir(filepath.Join(repoRoot(t), "bundle"))
	if err != nil {
		t.Fatalf("loading bundle: %v", err)
	}
	csv := b.CSV
	spec := csv.Spec.InstallStrategy.StrategySpec
	if len(spec.DeploymentSpecs) != 1 {
		t.Fatalf("the CSV has %d deployments, want 1", len(spec.DeploymentSpecs))
	}
	dep := spec.DeploymentSpecs[0]
	pod := dep.Spec.Template.Spec
	sa := pod.ServiceAccountName
	e := env.New(t, env.Options{CRDDirectoryPaths: []string{bundleCRDs(t, b)}, WebhookPaths: []string{olmWebhookConfigs(t, csv)}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: olmNamespace}}); err != nil {
		t.Fatal(err)
	}
	installCSVPermissions(t, ctx, e.Client, spec)

	// EC2, EKS, SSM, Pricing and SQS: the HTTP-level fake, shaped like cluster "prod" in us-west-2,
	// with docs/aws.md's interruption queue.
	aws := fake.NewStandard("prod")
	defer aws.Close()
	aws.CreateQueue("joist-prod")

	// The manager container as the Deployment runs it: its arguments, then the listen addresses a
	// test process needs and the fake's endpoint (the last occurrence of a flag wins); its literal
	// env, POD_NAMESPACE from the downward API, and docs/aws.md's Subscription env merged as OLM
	// merges it.
	c := mergeSubscriptionEnv(containerNamed(t, pod, "manager"), eksEnv)
	if p, _ := selectedProvider(c); p != "aws" {
		t.Fatalf("the CSV selects provider %q, want aws", p)
	}
	ports := make([]int, 2)
	for i := range ports {
		if ports[i], err = env.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	wio := e.WebhookInstallOptions
	args := append(append([]string{}, c.Args...),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(ports[0]), "--metrics-bind-address=127.0.0.1:"+strconv.Itoa(ports[1]),
		"--webhook-port="+strconv.Itoa(wio.LocalServingPort), "--webhook-cert-dir="+wio.LocalServingCertDir, "--aws-endpoint="+aws.URL)
	if !strings.Contains(strings.Join(c.Args, " "), "--leader-elect") {
		t.Errorf("the CSV's manager does not elect a leader: args %v", c.Args)
	}
	cmd := exec.CommandContext(ctx, buildManager(t), args...)
	cmd.Env = []string{"KUBECONFIG=" + impersonatingKubeconfig(t, e, sa), "HOME=" + t.TempDir(),
		"AWS_ACCESS_KEY_ID=AKIAFAKE", "AWS_SECRET_ACCESS_KEY=fake", "AWS_EC2_METADATA_DISABLED=true"} // the fake checks no signature
	for _, v := range c.Env {
		switch {
		case v.ValueFrom == nil:
			cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
		case v.ValueFrom.FieldRef != nil && v.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			cmd.Env = append(cmd.Env, v.Name+"="+olmNamespace)
		case v.ValueFrom.ResourceFieldRef != nil && v.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
			cmd.Env = append(cmd.Env, v.Name+"="+strconv.FormatInt(c.Resources.Limits.Memory().Value(), 10))
		default:
			t.Fatalf("env %s comes from %+v, which this test does not resolve", v.Name, v.ValueFrom)
		}
	}
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("manager output:\n%s", out.String())
		}
	})
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !ok() {
			select {
			case <-exited:
				t.Fatalf("the manager exited (%v) while waiting for %s", exitErr, what)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	wait("the manager to become ready", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	wait("the leader election lease in the install namespace", func() bool {
		var leases coordinationv1.LeaseList
		if err := e.Client.List(ctx, &leases, client.InNamespace(olmNamespace)); err != nil {
			return false
		}
		return len(leases.Items) == 1 && ptr.Deref(leases.Items[0].Spec.HolderIdentity, "") != ""
	})

	nodeClass := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(ec2NodeClass), &nodeClass.Object); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	pool := func(name string, limits v1.Limits) *v1.NodePool {
		return &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{Limits: limits, Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}},
		}}}}
	}
	// Admission: the guardrails webhook, called through the CSV's webhookdefinition, denies a pool
	// without limits with its message (and admits one with limits, below).
	err = e.Client.Create(ctx, pool("unbounded", nil))
	if err == nil || !strings.Contains(err.Error(), `admission webhook "vnodepool.policy.joist.dev" denied the request`) ||
		!strings.Contains(err.Error(), "sets no limit") {
		t.Errorf("a NodePool without limits: err = %v, want the vnodepool webhook's denial naming the missing limit", err)
	}

	if err := e.Client.Create(ctx, pool("general", v1.Limits{corev1.ResourceCPU: resource.MustParse("100")})); err != nil {
		t.Fatalf("a NodePool with limits: %v", err)
	}
	np := &v1.NodePool{}
	wait("the NodePool's status, conditions and hash", func() bool {
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "general"}, np); err != nil {
			return false
		}
		return np.Annotations[v1.NodePoolHashAnnotationKey] != "" && np.Status.Nodes != nil &&
			meta.IsStatusConditionTrue(np.Status.Conditions, v1.ConditionTypeNodeClassReady) && meta.IsStatusConditionTrue(np.Status.Conditions, v1.ConditionTypeReady)
	})
	if np.Annotations[v1.NodePoolHashAnnotationKey] != np.Hash() || np.Status.Resources.Cpu().Sign() != 0 {
		t.Errorf("pool hash %q (want %s), resources %v", np.Annotations[v1.NodePoolHashAnnotationKey], np.Hash(), np.Status.Resources)
	}

	wait("the EC2NodeClass's status (subnets, security groups, AMIs resolved through the fake)", func() bool {
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "default"}, nodeClass); err != nil {
			return false
		}
		conditions, _, _ := unstructured.NestedSlice(nodeClass.Object, "status", "conditions")
		for _, c := range conditions {
			if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
				return true
			}
		}
		return false
	})

	// The grant NodeClaims' blockOwnerDeletion owner references need under OpenShift's
	// OwnerReferencesPermissionEnforcement, as the apiserver's authorizer decides it for the SA.
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + olmNamespace + ":" + sa,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + olmNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: v1.Group, Resource: "nodepools", Subresource: "finalizers", Verb: "update", Name: "general"},
	}}
	if err := e.Client.Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	if !review.Status.Allowed {
		t.Errorf("the CSV's ServiceAccount may not update nodepools/finalizers: %+v", review.Status)
	}

	time.Sleep(2 * time.Second) // the observation window: the other loops make their first requests, none may be forbidden
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			t.Errorf("the manager was refused a request under the CSV's permissions: %s", line)
		}
	}
}
