package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joist-dev/joist/catalog/ec2"
)

const docsMD = "## m5 Family\n### `m5.large`\n#### Labels\n | Label | Value |\n |--|--|\n" +
	" |karpenter.k8s.aws/instance-category|m|\n |karpenter.k8s.aws/instance-cpu|2|\n |karpenter.k8s.aws/instance-family|m5|\n" +
	" |karpenter.k8s.aws/instance-hypervisor|nitro|\n |karpenter.k8s.aws/instance-memory|8192|\n |kubernetes.io/arch|amd64|\n" +
	" |kubernetes.io/os|linux|\n |node.kubernetes.io/instance-type|m5.large|\n#### Resources\n | Resource | Quantity |\n |--|--|\n" +
	" |cpu|1930m|\n |ephemeral-storage|17Gi|\n |memory|6903Mi|\n |pods|29|\n |vpc.amazonaws.com/pod-eni|9|\n" +
	"### `a1.metal`\n#### Labels\n | Label | Value |\n |--|--|\n |karpenter.k8s.aws/instance-cpu|16|\n" +
	" |karpenter.k8s.aws/instance-hypervisor||\n |karpenter.k8s.aws/instance-memory|32768|\n |kubernetes.io/arch|arm64|\n" +
	"#### Resources\n | Resource | Quantity |\n |--|--|\n |cpu|15890m|\n |memory|27322Mi|\n |pods|234|\n"

const vpcLimits = `package instancetype
var Limits = map[string]*VPCLimits{
	"m5.large": {Interface: 3, IPv4PerInterface: 10, DefaultNetworkCardIndex: 0,
		NetworkCards: []NetworkCard{{MaximumNetworkInterfaces: 3, NetworkCardIndex: 0}}},
	"a1.metal": {Interface: 8, IPv4PerInterface: 30, DefaultNetworkCardIndex: 0,
		NetworkCards: []NetworkCard{{MaximumNetworkInterfaces: 8, NetworkCardIndex: 0}}},
}`

const pricingGo = `package pricing
// generated at 2026-07-20T13:44:30Z for us-east-1
var InitialOnDemandPricesAWS = map[string]map[ec2types.InstanceType]float64{
	"us-east-1": {"a1.metal": 0.408000, "m5.large": 0.096000},
}`

func writeRepo(t *testing.T, docs string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range map[string]string{
		"website/content/en/docs/reference/instance-types.md":  docs,
		"pkg/providers/instancetype/zz_generated.vpclimits.go": vpcLimits,
		"pkg/providers/pricing/zz_generated.pricing_aws.go":    pricingGo,
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestGenerate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "instancetypes.json")
	if err := run(writeRepo(t, docsMD), out, ""); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var d ec2.Data
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.PricesRegion != "us-east-1" || d.PricesDate.Format("2006-01-02") != "2026-07-20" || len(d.InstanceTypes) != 2 {
		t.Fatalf("generated %s %s with %d types", d.PricesRegion, d.PricesDate, len(d.InstanceTypes))
	}
	m5 := d.InstanceTypes[1]
	if m5.Name != "m5.large" || m5.VCPU != 2 || m5.MemoryMiB != 8192 || m5.ENIs != 3 || m5.IPv4PerENI != 10 || m5.OnDemandPrice != 0.096 ||
		m5.Extended["vpc.amazonaws.com/pod-eni"] != 9 || m5.Labels["karpenter.k8s.aws/instance-family"] != "m5" {
		t.Errorf("m5.large = %+v", m5)
	}
}

func TestGenerateRefusesFiguresItCannotReproduce(t *testing.T) {
	bad := strings.Replace(docsMD, "|memory|6903Mi|", "|memory|7000Mi|", 1)
	err := run(writeRepo(t, bad), filepath.Join(t.TempDir(), "x.json"), "")
	if err == nil || !strings.Contains(err.Error(), "m5.large: memory 6903Mi≠7000Mi") {
		t.Fatalf("err = %v, want the m5.large memory mismatch named", err)
	}
}

func TestRegionPrices(t *testing.T) {
	src := `package pricing
// generated at 2026-07-20T13:44:38Z for us-east-1
var InitialOnDemandPricesUSGov = map[string]map[ec2types.InstanceType]float64{
	// us-gov-east-1
	"us-gov-east-1": {
		// m5 family
		"m5.large": 0.121000, "m5.xlarge": 0.242000,
	},
	"us-gov-west-1": {"m5.large": 0.121000, "t3.micro": 0.012200},
}`
	date, tables, err := parseRegionPrices([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if date.Format("2006-01-02") != "2026-07-20" || len(tables) != 2 || tables["us-gov-east-1"]["m5.xlarge"] != 0.242 || tables["us-gov-west-1"]["t3.micro"] != 0.0122 {
		t.Errorf("parseRegionPrices = %s %v", date, tables)
	}
	dir := t.TempDir()
	for _, f := range regionPriceFiles {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f.path)), 0o755); err != nil {
			t.Fatal(err)
		}
		body := src
		if f.currency == "CNY" {
			body = strings.NewReplacer("us-gov-east-1", "cn-north-1", "us-gov-west-1", "cn-northwest-1").Replace(src)
		}
		if err := os.WriteFile(filepath.Join(dir, f.path), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "regionprices.json")
	if err := runRegionPrices(dir, out); err != nil {
		t.Fatal(err)
	}
	var file ec2.RegionPriceFile
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if file.Regions["cn-north-1"].Currency != "CNY" || file.Regions["us-gov-west-1"].Currency != "USD" || len(file.Regions) != 4 {
		t.Errorf("regionprices.json = %+v", file)
	}
}
