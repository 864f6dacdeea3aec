package reliability

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/test/env"
)

// TestWebhookOutageAndCertRotation: with the manager process down, pods are still admitted
// (fail-open) while NodePool writes fail closed with a message naming the webhook; a serving
// certificate rotated on disk is served without a restart.
func TestWebhookOutageAndCertRotation(t *testing.T) {
	ctx := context.Background()
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	e := env.New(t, env.Options{WebhookPaths: []string{filepath.Join(root, "config", "webhook")}})
	kube, err := client.New(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	wio := e.WebhookInstallOptions
	certDir := t.TempDir()
	for _, f := range []string{"tls.crt", "tls.key"} {
		b, err := os.ReadFile(filepath.Join(wio.LocalServingCertDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certDir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := &stack{t: t, env: e, kube: kube, args: []string{"--enable-webhooks=true", "--webhook-port=" + strconv.Itoa(wio.LocalServingPort), "--webhook-cert-dir=" + certDir}}
	t.Cleanup(s.kill)
	addr := net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
	if err := kube.Create(ctx, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}

	// Outage: no manager.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "during-outage", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if err := kube.Create(ctx, pod); err != nil {
		t.Fatalf("pod creation must succeed while Joist is down (fail-open): %v", err)
	}
	err = kube.Create(ctx, limitedPool("during-outage", 10))
	if err == nil {
		t.Fatal("NodePool creation must fail while Joist is down (fail-closed)")
	}
	if !strings.Contains(err.Error(), `failed calling webhook "vnodepool.policy.joist.dev"`) {
		t.Errorf("NodePool refusal %q does not name the webhook", err)
	}
	t.Logf("NodePool create during the outage: %v", err)
	outage := err.Error()

	// Back up: NodePools are admitted again.
	s.start()
	firstSerial := waitServing(t, addr, nil)
	if err := eventuallyErr(30*time.Second, func() error { return kube.Create(ctx, limitedPool("after-outage", 20)) }); err != nil {
		t.Fatalf("NodePool after the manager came back: %v", err)
	}

	// Rotate: a new CA (trusted alongside the old one) signs a new serving certificate on disk.
	caPEM, certPEM, keyPEM := newServingCert(t, wio.LocalServingHost)
	trustAlso(t, ctx, kube, caPEM)
	for name, data := range map[string][]byte{"tls.key": keyPEM, "tls.crt": certPEM} {
		tmp := filepath.Join(certDir, "."+name)
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(certDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	pid := s.manager.Pid()
	newSerial := waitServing(t, addr, firstSerial)
	if s.manager.Pid() != pid {
		t.Fatal("the manager restarted")
	}
	if err := eventuallyErr(30*time.Second, func() error { return kube.Create(ctx, limitedPool("after-rotation", 30)) }); err != nil {
		t.Fatalf("NodePool through the rotated certificate: %v", err)
	}
	report(t, "webhook outage and certificate rotation", "| check | result |\n|---|---|", []string{
		"| pod created with the manager down | admitted (fail-open) |",
		fmt.Sprintf("| NodePool created with the manager down | refused: `%s` |", strings.ReplaceAll(outage, "|", "/")),
		fmt.Sprintf("| certificate rotated on disk | served without restart (serial %s → %s) |", firstSerial, newSerial),
	})
}

// limitedPool is a NodePool the built-in guardrails accept (limits, no GPU types; distinct weights
// keep pools from overlapping).
func limitedPool(name string, weight int32) *v1.NodePool {
	return &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{Weight: &weight,
		Limits: v1.Limits{corev1.ResourceCPU: resource.MustParse("100"), corev1.ResourceMemory: resource.MustParse("400Gi")},
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
				{Key: "joist.dev/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}}},
			NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.GroupVersion.Group, Kind: "KWOKNodeClass", Name: "default"},
		}}}}
}

// waitServing waits until addr serves a certificate whose serial differs from not, and returns it.
func waitServing(t *testing.T, addr string, not *big.Int) *big.Int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the served certificate
		if err == nil {
			serial := conn.ConnectionState().PeerCertificates[0].SerialNumber
			_ = conn.Close()
			if not == nil || serial.Cmp(not) != 0 {
				return serial
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook server on %s: no new certificate after 60s (err %v)", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func eventuallyErr(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// newServingCert makes a CA and a serving certificate for host signed by it.
func newServingCert(t *testing.T, host string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "rotated-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano() + 1), Subject: pkix.Name{CommonName: host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(host)}, DNSNames: []string{"localhost"}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// trustAlso adds caPEM to every webhook's caBundle, as cert-manager's CA injector does on rotation.
func trustAlso(t *testing.T, ctx context.Context, kube client.Client, caPEM []byte) {
	t.Helper()
	var mutating admissionregistrationv1.MutatingWebhookConfigurationList
	var validating admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := kube.List(ctx, &mutating); err != nil {
		t.Fatal(err)
	}
	if err := kube.List(ctx, &validating); err != nil {
		t.Fatal(err)
	}
	for i := range mutating.Items {
		c := &mutating.Items[i]
		for j := range c.Webhooks {
			c.Webhooks[j].ClientConfig.CABundle = append(c.Webhooks[j].ClientConfig.CABundle, caPEM...)
		}
		if err := kube.Update(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for i := range validating.Items {
		c := &validating.Items[i]
		for j := range c.Webhooks {
			c.Webhooks[j].ClientConfig.CABundle = append(c.Webhooks[j].ClientConfig.CABundle, caPEM...)
		}
		if err := kube.Update(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}
