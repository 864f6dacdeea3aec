package azure_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	"sigs.k8s.io/yaml"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	v1 "github.com/joist-dev/joist/api/v1"
	azureprovider "github.com/joist-dev/joist/cloudprovider/azure"
	"github.com/joist-dev/joist/cloudprovider/azure/fake"
)

// selfSignedCA is a cluster CA certificate as AKS's would be, PEM-encoded.
func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestCustomDataCarriesWhatAnAKSNodeNeedsToJoin launches a spot VM for a claim with taints,
// startup taints and labels, then reads its custom data back with real parsers: base64, YAML and,
// where cloud-init is installed, cloud-init's own schema validation; the CA with crypto/x509; the
// bootstrap kubeconfig with client-go's loader and validator; the bootstrap token with
// cluster-bootstrap's format check; the provider ID with the Azure SDK's resource ID parser; each
// label with apimachinery's validation and the kubelet's own rule for the labels it may set; taints
// and reservations by their formats. It asserts what the AKS node bootstrapper needs: the API
// server's FQDN, the CA, TLS bootstrap, cluster DNS, max pods, the kubernetes.azure.com labels the
// AKS provider sets, and the registration taints.
func TestCustomDataCarriesWhatAnAKSNodeNeedsToJoin(t *testing.T) {
	ca := selfSignedCA(t)
	h := newHarness(t, azv1beta1.AKSNodeClassSpec{ImageFamily: to.Ptr("AzureLinux"),
		Kubelet: &azv1beta1.KubeletConfiguration{ImageGCHighThresholdPercent: to.Ptr[int32](90), PodPidsLimit: to.Ptr[int64](4096)}},
		func(o *azureprovider.Options) {
			o.ClusterCABundle, o.ClusterDNS = base64.StdEncoding.EncodeToString(ca), ""
		})
	c := claim("n1", req(v1.CapacityTypeLabelKey, "spot"), req(v1.LabelInstanceType, "Standard_D4s_v3"))
	c.Labels["team"] = "web"
	c.Labels["node-role.kubernetes.io/web"] = ""                                 // the kubelet may not set it: Joist must leave it out
	c.Labels["node.kubernetes.io/exclude-from-external-load-balancers"] = "true" // node.kubernetes.io is the kubelet's
	c.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	c.Spec.StartupTaints = []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute}}
	if _, err := h.provider.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}

	data, err := base64.StdEncoding.DecodeString(h.fake.LastCustomData())
	if err != nil {
		t.Fatalf("custom data is not base64: %v", err)
	}
	body, ok := strings.CutPrefix(string(data), "#cloud-config\n")
	if !ok {
		t.Fatalf("custom data does not start with #cloud-config:\n%s", data)
	}
	var cfg struct {
		WriteFiles []struct{ Path, Permissions, Encoding, Content string } `json:"write_files"`
		RunCmd     [][]string                                              `json:"runcmd"`
	}
	if err := yaml.UnmarshalStrict([]byte(body), &cfg); err != nil {
		t.Fatalf("cloud-config: %v", err)
	}
	cloudInitSchema(t, data)
	files := map[string]string{}
	for _, f := range cfg.WriteFiles {
		if _, err := strconv.ParseUint(f.Permissions, 8, 32); err != nil {
			t.Errorf("%s: permissions %q are not octal", f.Path, f.Permissions)
		}
		files[f.Path] = f.Content
	}
	if n := len(cfg.RunCmd); n == 0 || strings.Join(cfg.RunCmd[n-1], " ") != "systemctl enable --now kubelet" {
		t.Errorf("runcmd %v does not end by starting the kubelet", cfg.RunCmd)
	}

	env := environmentFile(t, files["/etc/default/kubelet"])
	flags := map[string]string{}
	for _, f := range strings.Fields(env["KUBELET_FLAGS"]) {
		name, value, ok := strings.Cut(f, "=")
		if !ok || !strings.HasPrefix(name, "--") {
			t.Errorf("kubelet flag %q is not --name=value", f)
		}
		if _, dup := flags[name]; dup {
			t.Errorf("kubelet flag %s given twice", name)
		}
		flags[name] = value
	}

	// The cluster CA, written where --client-ca-file and the kubeconfig point.
	caFile := files[flags["--client-ca-file"]]
	block, _ := pem.Decode([]byte(caFile))
	if block == nil {
		t.Fatalf("--client-ca-file %s holds no PEM block", flags["--client-ca-file"])
	}
	if cert, err := x509.ParseCertificate(block.Bytes); err != nil || !cert.IsCA {
		t.Errorf("cluster CA: %v (IsCA %v)", err, err == nil && cert.IsCA)
	}

	// TLS bootstrap: the kubeconfig is valid, names the API server by its FQDN and carries a
	// well-formed bootstrap token.
	kc, err := clientcmd.Load([]byte(files[flags["--bootstrap-kubeconfig"]]))
	if err != nil {
		t.Fatalf("--bootstrap-kubeconfig %s: %v", flags["--bootstrap-kubeconfig"], err)
	}
	// Validate reads the CA file: write the files under a root as cloud-init would and point there.
	root := t.TempDir()
	for path, content := range files {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rooted := kc.DeepCopy()
	for _, c := range rooted.Clusters {
		c.CertificateAuthority = filepath.Join(root, c.CertificateAuthority)
	}
	if err := clientcmd.Validate(*rooted); err != nil {
		t.Errorf("bootstrap kubeconfig does not validate: %v", err)
	}
	ctxt := kc.Contexts[kc.CurrentContext]
	cluster, user := kc.Clusters[ctxt.Cluster], kc.AuthInfos[ctxt.AuthInfo]
	server, err := url.Parse(cluster.Server)
	if err != nil || server.Scheme != "https" || net.ParseIP(server.Hostname()) != nil || server.Hostname() != "prod-dns-1234.hcp.eastus.azmk8s.io" {
		t.Errorf("API server %q: want https://<the cluster's FQDN>", cluster.Server)
	}
	if cluster.CertificateAuthority != flags["--client-ca-file"] {
		t.Errorf("kubeconfig trusts %s, the CA is written to %s", cluster.CertificateAuthority, flags["--client-ca-file"])
	}
	if !bootstraputil.IsValidBootstrapToken(user.Token) {
		t.Errorf("bootstrap token %q is not <6>.<16> lowercase alphanumerics", user.Token)
	}
	if flags["--rotate-certificates"] != "true" || flags["--kubeconfig"] == "" {
		t.Errorf("TLS bootstrap needs --kubeconfig and certificate rotation: %v", flags)
	}

	// The VM the kubelet runs on.
	rid, err := arm.ParseResourceID(strings.TrimPrefix(flags["--provider-id"], "azure://"))
	if err != nil || !strings.HasPrefix(flags["--provider-id"], "azure:///subscriptions/") || rid.Name != "aks-n1" ||
		rid.ResourceGroupName != fake.ResourceGroup || rid.SubscriptionID != fake.Subscription || rid.ResourceType.String() != "Microsoft.Compute/virtualMachines" {
		t.Errorf("--provider-id %q: %v", flags["--provider-id"], err)
	}

	// Cluster DNS (AKS's default service IP when unset), max pods for Azure CNI Overlay, AKS's
	// reservations for Standard_D4s_v3 and the class's kubelet settings over the defaults.
	for name, want := range map[string]string{
		"--cluster-dns": "10.0.0.10", "--cluster-domain": "cluster.local", "--max-pods": "250", "--cloud-provider": "external",
		"--anonymous-auth": "false", "--authorization-mode": "Webhook", "--read-only-port": "0",
		"--image-gc-high-threshold": "90", "--pod-max-pids": "4096",
	} {
		if flags[name] != want {
			t.Errorf("%s = %q, want %q", name, flags[name], want)
		}
	}
	if net.ParseIP(flags["--cluster-dns"]) == nil {
		t.Errorf("--cluster-dns %q is not an IP", flags["--cluster-dns"])
	}
	reserved := map[string]resource.Quantity{}
	for _, kv := range strings.Split(flags["--kube-reserved"], ",") {
		k, v, _ := strings.Cut(kv, "=")
		q, err := resource.ParseQuantity(v)
		if err != nil {
			t.Errorf("--kube-reserved %s: %v", kv, err)
		}
		reserved[k] = q
	}
	if cpu, mem := reserved["cpu"], reserved["memory"]; cpu.MilliValue() != 140 || mem.Value() != 2662<<20 {
		t.Errorf("--kube-reserved %s, want AKS's cpu=140m,memory=2662Mi for 4 vCPU / 16 GiB", flags["--kube-reserved"])
	}
	if sig, q, ok := strings.Cut(flags["--eviction-hard"], "<"); !ok || sig != "memory.available" || !quantityIs(q, "750Mi") {
		t.Errorf("--eviction-hard %q, want memory.available<750Mi", flags["--eviction-hard"])
	}

	// Registration taints: the claim's, its startup taints and karpenter.sh/unregistered.
	var taints []string
	for _, spec := range strings.Split(flags["--register-with-taints"], ",") {
		kv, effect, _ := strings.Cut(spec, ":")
		k, val, _ := strings.Cut(kv, "=")
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(val)...); len(errs) > 0 {
			t.Errorf("taint %q: %v", spec, errs)
		}
		switch corev1.TaintEffect(effect) {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			t.Errorf("taint %q has effect %q", spec, effect)
		}
		taints = append(taints, spec)
	}
	sort.Strings(taints)
	if got, want := strings.Join(taints, ","), "dedicated=web:NoSchedule,karpenter.sh/unregistered:NoExecute,node.cilium.io/agent-not-ready=true:NoExecute"; got != want {
		t.Errorf("--register-with-taints %s, want %s", got, want)
	}

	// Labels: valid, each one the kubelet may set, and the AKS provider's kubernetes.azure.com set.
	labels := map[string]string{}
	for _, kv := range strings.Split(env["KUBELET_NODE_LABELS"], ",") {
		k, val, _ := strings.Cut(kv, "=")
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(val)...); len(errs) > 0 {
			t.Errorf("label %q: %v", kv, errs)
		}
		if ns, _, _ := strings.Cut(k, "/"); (strings.HasSuffix(ns, "kubernetes.io") || strings.HasSuffix(ns, "k8s.io")) && !kubeletapis.IsKubeletLabel(k) {
			t.Errorf("label %s: the kubelet refuses to register with it", k)
		}
		labels[k] = val
	}
	for k, want := range map[string]string{
		"kubernetes.azure.com/role": "agent", "kubernetes.azure.com/cluster": fake.ResourceGroup, "kubernetes.azure.com/mode": "user",
		"kubernetes.azure.com/os-sku": "AzureLinux", "kubernetes.azure.com/os-sku-requested": "AzureLinux", "kubernetes.azure.com/os-sku-effective": "AzureLinux3",
		"kubernetes.azure.com/scalesetpriority": "spot", "kubernetes.azure.com/priority": "spot",
		"kubernetes.azure.com/network-subnet": "nodes", "kubernetes.azure.com/azure-cni-overlay": "true", "kubernetes.azure.com/podnetwork-type": "overlay",
		"kubernetes.azure.com/network-stateless-cni": "false", "kubernetes.azure.com/localdns-state": "disabled",
		"karpenter.azure.com/sku-cpu": "4", "karpenter.sh/capacity-type": "spot", "node.kubernetes.io/instance-type": "Standard_D4s_v3",
		"karpenter.sh/nodepool": "general", "team": "web", "node.kubernetes.io/exclude-from-external-load-balancers": "true",
	} {
		if got, ok := labels[k]; !ok || got != want {
			t.Errorf("label %s = %q (set %v), want %q", k, got, ok, want)
		}
	}
	if _, ok := labels["node-role.kubernetes.io/web"]; ok {
		t.Error("node-role.kubernetes.io/web is in KUBELET_NODE_LABELS: the kubelet would refuse to start")
	}
}

func quantityIs(s, want string) bool {
	q, err := resource.ParseQuantity(s)
	return err == nil && q.Cmp(resource.MustParse(want)) == 0
}

// environmentFile reads KEY=VALUE lines as systemd's EnvironmentFile= does for unquoted values.
func environmentFile(t *testing.T, content string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(content, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(v, `"'\`) {
			t.Errorf("/etc/default/kubelet line %q is not KEY=unquoted value", line)
		}
		out[k] = v
	}
	return out
}

// cloudInitSchema validates the custom data with cloud-init's own schema check when cloud-init is
// installed (Debian's package); otherwise it says so.
func cloudInitSchema(t *testing.T, data []byte) {
	t.Helper()
	bin, err := exec.LookPath("cloud-init")
	if err != nil {
		t.Log("cloud-init is not installed: its schema check was skipped (apt-get install cloud-init runs it)")
		return
	}
	path := filepath.Join(t.TempDir(), "user-data")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "schema", "--config-file", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Valid") {
		t.Errorf("cloud-init schema: %v\n%s", err, out)
	}
}
