// Command ec2catalog generates catalog/ec2/instancetypes.json, the embedded EC2 instance-type data.
//
// Offline source (no AWS account needed): a checkout of aws/karpenter-provider-aws, whose generated
// files carry facts published from the EC2 and Pricing APIs:
//
//	website/content/en/docs/reference/instance-types.md    labels (vCPU, memory, GPUs…) and the allocatable it computes
//	pkg/providers/instancetype/zz_generated.vpclimits.go   ENIs and IPv4 addresses per ENI
//	pkg/providers/pricing/zz_generated.pricing_aws.go       us-east-1 on-demand prices and their date
//
// With -region-prices-out it writes catalog/ec2/regionprices.json instead: every other region's
// on-demand prices, from the same checkout's zz_generated.pricing_aws_cn.go (China, CNY) and
// zz_generated.pricing_aws_us_gov.go (GovCloud), and for the other commercial regions from the
// ec2instances.info data embedded in the Go module github.com/cristim/ec2-instances-info (the
// version go.mod requires; its date is the pseudo-version's). Per region the newest source wins.
//
// With -pricing-region, on-demand prices are taken live from the AWS Pricing API (GetProducts,
// default credentials) instead, dated now.
//
// Every type's allocatable cpu, memory, pods and ephemeral storage is recomputed with catalog/ec2's
// math and compared with the published figures; the generator fails on any difference.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/joist-dev/joist/catalog/ec2"
)

func main() {
	var (
		repo          = flag.String("karpenter-repo", os.Getenv("KARPENTER_PROVIDER_AWS"), "checkout of aws/karpenter-provider-aws")
		out           = flag.String("o", "instancetypes.json", "output file")
		pricingRegion = flag.String("pricing-region", "", "take on-demand prices from the AWS Pricing API for this region")
		regionOut     = flag.String("region-prices-out", "", "instead, write the other regions' price tables (regionprices.json) here")
		commit        = flag.String("karpenter-commit", "", "commit of the -karpenter-repo checkout, recorded as the China and GovCloud prices' source (default: its git HEAD)")
	)
	flag.Parse()
	var err error
	if *regionOut != "" {
		err = runRegionPrices(*repo, *commit, *regionOut, ec2InstancesInfoPrices)
	} else {
		err = run(*repo, *out, *pricingRegion)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ec2catalog:", err)
		os.Exit(1)
	}
}

func run(repo, out, pricingRegion string) error {
	if repo == "" {
		return fmt.Errorf("-karpenter-repo (or $KARPENTER_PROVIDER_AWS) is required")
	}
	read := func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(repo, rel)) }
	docs, err := read("website/content/en/docs/reference/instance-types.md")
	if err != nil {
		return err
	}
	limitsSrc, err := read("pkg/providers/instancetype/zz_generated.vpclimits.go")
	if err != nil {
		return err
	}
	pricingSrc, err := read("pkg/providers/pricing/zz_generated.pricing_aws.go")
	if err != nil {
		return err
	}
	types, err := parseDocs(string(docs))
	if err != nil {
		return fmt.Errorf("parsing instance-types.md: %w", err)
	}
	limits, err := parseVPCLimits(limitsSrc)
	if err != nil {
		return fmt.Errorf("parsing vpclimits: %w", err)
	}
	region, date, prices, err := parsePricing(pricingSrc)
	if err != nil {
		return fmt.Errorf("parsing pricing: %w", err)
	}
	source := "aws/karpenter-provider-aws generated instance-types.md, vpclimits and " + region + " pricing"
	if pricingRegion != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if prices, err = livePrices(ctx, pricingRegion); err != nil {
			return err
		}
		region, date = pricingRegion, time.Now().UTC()
		source = "aws/karpenter-provider-aws instance-types.md and vpclimits; AWS Pricing API GetProducts for " + region
	}
	data := &ec2.Data{Source: source, PricesRegion: region, PricesDate: date}
	var mismatches []string
	for _, dt := range types {
		info := dt.info
		l, ok := limits[info.Name]
		if !ok {
			continue // no ENI data: max pods unknown
		}
		info.ENIs, info.IPv4PerENI = l.enis, l.ipv4
		info.OnDemandPrice = prices[info.Name]
		if msg := verify(dt); msg != "" {
			mismatches = append(mismatches, msg)
		}
		data.InstanceTypes = append(data.InstanceTypes, info)
	}
	if len(mismatches) > 0 {
		return fmt.Errorf("allocatable differs from the published figures for %d types:\n%s", len(mismatches), strings.Join(mismatches, "\n"))
	}
	sort.Slice(data.InstanceTypes, func(i, j int) bool { return data.InstanceTypes[i].Name < data.InstanceTypes[j].Name })
	return write(out, data)
}

// write prints one instance type per line so the file diffs well.
func write(path string, d *ec2.Data) error {
	var b strings.Builder
	header, err := json.Marshal(map[string]any{"source": d.Source, "pricesRegion": d.PricesRegion, "pricesDate": d.PricesDate})
	if err != nil {
		return err
	}
	b.WriteString(strings.TrimSuffix(string(header), "}"))
	b.WriteString(`,"instanceTypes":[` + "\n")
	for i, it := range d.InstanceTypes {
		line, err := json.Marshal(it)
		if err != nil {
			return err
		}
		b.Write(line)
		if i < len(d.InstanceTypes)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]}\n")
	var check ec2.Data
	if err := json.Unmarshal([]byte(b.String()), &check); err != nil {
		return fmt.Errorf("generated file does not parse: %w", err)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
