package fake

import (
	"net/http"
	"strconv"
	"strings"
)

func str(in map[string]any, k string) string {
	v, _ := in[k].(string)
	return v
}

func (s *Server) serveJSON(w http.ResponseWriter, service, action string, in map[string]any) {
	switch service + "." + action {
	case "ssm.GetParameter":
		name := str(in, "Name")
		v, ok := s.ssm[name]
		if !ok {
			writeJSONError(w, http.StatusBadRequest, "ParameterNotFound", "parameter "+name+" not found")
			return
		}
		writeJSON(w, map[string]any{"Parameter": map[string]any{"Name": name, "Value": v, "Type": "String", "Version": 1}})
	case "sqs.GetQueueUrl":
		name := str(in, "QueueName")
		if _, ok := s.queues[name]; !ok {
			writeJSONError(w, http.StatusBadRequest, "com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist.")
			return
		}
		writeJSON(w, map[string]any{"QueueUrl": s.URL + "/queue/" + name})
	case "sqs.ReceiveMessage":
		q := s.queueName(str(in, "QueueUrl"))
		max := 1
		if n, ok := in["MaxNumberOfMessages"].(float64); ok && n > 0 {
			max = int(n)
		}
		var out []map[string]any
		for _, m := range s.queues[q] {
			if len(out) == max {
				break
			}
			out = append(out, map[string]any{"MessageId": m.id, "ReceiptHandle": m.receipt, "Body": m.body})
		}
		writeJSON(w, map[string]any{"Messages": out})
	case "sqs.DeleteMessage":
		q := s.queueName(str(in, "QueueUrl"))
		rh := str(in, "ReceiptHandle")
		kept := s.queues[q][:0]
		for _, m := range s.queues[q] {
			if m.receipt != rh {
				kept = append(kept, m)
			}
		}
		s.queues[q] = kept
		writeJSON(w, map[string]any{})
	case "pricing.GetProducts":
		size := 100
		if n, ok := in["MaxResults"].(float64); ok && n > 0 {
			size = int(n)
		}
		size = min(size, s.PageSize)
		start, _ := strconv.Atoi(str(in, "NextToken"))
		end := min(start+size, len(s.products))
		out := map[string]any{"PriceList": s.products[start:end], "FormatVersion": "aws_v1"}
		if end < len(s.products) {
			out["NextToken"] = strconv.Itoa(end)
		}
		writeJSON(w, out)
	default:
		writeJSONError(w, http.StatusBadRequest, "UnknownOperationException", "the fake does not implement "+service+"."+action)
	}
}

func (s *Server) queueName(u string) string {
	return u[strings.LastIndex(u, "/")+1:]
}
