package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ec2instancesinfo "github.com/cristim/ec2-instances-info"

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
	commercial := func() (pricesSource, error) {
		return pricesSource{name: "module@v0", date: time.Date(2023, 1, 12, 0, 0, 0, 0, time.UTC), currency: "USD", tables: map[string]map[string]float64{
			"us-east-1":     {"m5.large": 0.096},
			"eu-west-1":     {"m5.large": 0.107, "m5.xlarge": 0.214},
			"us-gov-west-1": {"m5.large": 0.1}, // older than the checkout's: not taken
		}}, nil
	}
	if err := runRegionPrices(dir, "abc123", out, commercial); err != nil {
		t.Fatal(err)
	}
	var file ec2.RegionPriceFile
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	cn, gov, eu := file.Regions["cn-north-1"], file.Regions["us-gov-west-1"], file.Regions["eu-west-1"]
	if cn.Currency != "CNY" || gov.Currency != "USD" || len(file.Regions) != 5 {
		t.Errorf("regionprices.json = %+v", file)
	}
	if gov.Prices["m5.large"] != 0.121 || gov.Source != "aws/karpenter-provider-aws@abc123 pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go" {
		t.Errorf("us-gov-west-1 = %+v, want the newer checkout's table with its commit", gov)
	}
	if eu.Prices["m5.xlarge"] != 0.214 || eu.Source != "module@v0" || eu.Date.Year() != 2023 {
		t.Errorf("eu-west-1 = %+v, want the commercial source's table and date", eu)
	}
	if _, ok := file.Regions["us-east-1"]; ok {
		t.Error("us-east-1 written: its newer prices are instancetypes.json's")
	}
}

// A source that disagrees with instancetypes.json's own-region prices (another OS, another unit, a
// parsing slip) is refused rather than embedded for every other region.
func TestRegionPricesRefuseASourceThatDisagrees(t *testing.T) {
	data := &ec2.Data{PricesRegion: "us-east-1", InstanceTypes: []*ec2.Info{
		{Name: "m5.large", OnDemandPrice: 0.096}, {Name: "c5.large", OnDemandPrice: 0.085},
	}}
	windows := pricesSource{name: "windows", tables: map[string]map[string]float64{
		"us-east-1": {"m5.large": 0.188, "c5.large": 0.177}, "eu-west-1": {"m5.large": 0.2},
	}}
	if _, err := mergeRegionPrices(data, []pricesSource{windows}); err == nil || !strings.Contains(err.Error(), "windows quotes 0 of 2 shared us-east-1 prices") {
		t.Fatalf("err = %v, want the disagreement named", err)
	}
	linux := pricesSource{name: "linux", tables: map[string]map[string]float64{
		"us-east-1": {"m5.large": 0.096, "c5.large": 0.085}, "eu-west-1": {"m5.large": 0.107, "x9.large": 0},
	}}
	file, err := mergeRegionPrices(data, []pricesSource{linux})
	if err != nil || len(file.Regions) != 1 || len(file.Regions["eu-west-1"].Prices) != 1 {
		t.Fatalf("merge = %+v, %v; want eu-west-1 with its one priced type", file, err)
	}
}

func TestLinuxOnDemandAndItsDate(t *testing.T) {
	data := ec2instancesinfo.InstanceData{{
		InstanceType: "m5.large",
		Pricing: map[string]ec2instancesinfo.RegionPrices{
			"eu-west-1":  {Linux: ec2instancesinfo.Pricing{OnDemand: 0.107}, MSWin: ec2instancesinfo.Pricing{OnDemand: 0.199}},
			"ap-south-2": {MSWin: ec2instancesinfo.Pricing{OnDemand: 0.2}}, // no Linux price: not sold there
		},
	}}
	got := linuxOnDemand(data)
	if len(got) != 1 || got["eu-west-1"]["m5.large"] != 0.107 {
		t.Errorf("linuxOnDemand = %v, want eu-west-1's Linux price only", got)
	}
	date, err := pseudoVersionTime("v0.0.0-20230112111652-35a8cfc9500f")
	if err != nil || date != time.Date(2023, 1, 12, 11, 16, 52, 0, time.UTC) {
		t.Errorf("pseudoVersionTime = %v, %v", date, err)
	}
	if _, err := pseudoVersionTime("v1.2.3"); err == nil {
		t.Error("a release version gave a date")
	}
}
