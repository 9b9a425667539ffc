package cluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAuditMergesStagesAndFiltersWrites(t *testing.T) {
	log := strings.Join([]string{
		`{"auditID":"1","stage":"RequestReceived","verb":"get","requestURI":"/version","user":{"username":"e2e:kubectl-hpa"},"userAgent":"kubectl/v1.32"}`,
		`{"auditID":"2","stage":"RequestReceived","verb":"update","requestURI":"/apis/apps/v1/namespaces/ns/deployments/web/scale","user":{"username":"e2e:kubectl-hpa"},"userAgent":"kubectl-hpa/v0.1","objectRef":{"resource":"deployments","namespace":"ns","name":"web","apiGroup":"apps","subresource":"scale"}}`,
		`{"auditID":"1","stage":"ResponseComplete","verb":"get","requestURI":"/version","user":{"username":"e2e:kubectl-hpa"},"userAgent":"kubectl/v1.32","responseStatus":{"code":200}}`,
		`{"auditID":"3","stage":"ResponseComplete","verb":"create","requestURI":"/api/v1/namespaces/ns/pods","user":{"username":"e2e:kube-controller-manager"},"userAgent":"kcm","objectRef":{"resource":"pods","namespace":"ns"},"responseStatus":{"code":201}}`,
		`{"auditID":"2","stage":"ResponseComplete","verb":"update","requestURI":"/apis/apps/v1/namespaces/ns/deployments/web/scale","user":{"username":"e2e:kubectl-hpa"},"userAgent":"kubectl-hpa/v0.1","objectRef":{"resource":"deployments","namespace":"ns","name":"web","apiGroup":"apps","subresource":"scale"},"responseStatus":{"code":200}}`,
		`{"auditID":"4","stage":"Requ`, // torn last line while the API server writes
	}, "\n")
	cases := []struct {
		name   string
		filter AuditFilter
		want   []string
	}{
		{"everything, stages merged, in first-seen order", AuditFilter{}, []string{
			"get /version (e2e:kubectl-hpa, \"kubectl/v1.32\") -> 200",
			"update /apis/apps/v1/namespaces/ns/deployments/web/scale (e2e:kubectl-hpa, \"kubectl-hpa/v0.1\") -> 200",
			"create /api/v1/namespaces/ns/pods (e2e:kube-controller-manager, \"kcm\") -> 201",
		}},
		{"writes of one user", AuditFilter{User: PluginUser, WritesOnly: true}, []string{
			"update /apis/apps/v1/namespaces/ns/deployments/web/scale (e2e:kubectl-hpa, \"kubectl-hpa/v0.1\") -> 200",
		}},
		{"by user agent prefix", AuditFilter{UserAgentPrefix: "kubectl/"}, []string{
			"get /version (e2e:kubectl-hpa, \"kubectl/v1.32\") -> 200",
		}},
		{"by namespace", AuditFilter{Namespace: "ns", User: "e2e:kube-controller-manager"}, []string{
			"create /api/v1/namespaces/ns/pods (e2e:kube-controller-manager, \"kcm\") -> 201",
		}},
		{"a user whose name is a prefix of another's matches only itself", AuditFilter{User: "e2e:kube"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reqs, err := parseAudit(strings.NewReader(log), tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range reqs {
				got = append(got, r.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseAuditKeepsTheBodyOfTheStageThatLogsIt(t *testing.T) {
	// The API server logs a patch's body at ResponseComplete only, after RequestReceived.
	log := strings.Join([]string{
		`{"auditID":"1","stage":"RequestReceived","verb":"patch","requestURI":"/apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers/web?fieldManager=kubectl-hpa","user":{"username":"e2e:kubectl-hpa"},"objectRef":{"resource":"horizontalpodautoscalers","namespace":"ns","name":"web","apiGroup":"autoscaling"}}`,
		`{"auditID":"1","stage":"ResponseComplete","verb":"patch","requestURI":"/apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers/web?fieldManager=kubectl-hpa","user":{"username":"e2e:kubectl-hpa"},"objectRef":{"resource":"horizontalpodautoscalers","namespace":"ns","name":"web","apiGroup":"autoscaling"},"requestObject":{"metadata":{"resourceVersion":"42"},"spec":{"maxReplicas":8}},"responseStatus":{"code":200}}`,
	}, "\n")
	reqs, err := parseAudit(strings.NewReader(log), AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || string(reqs[0].RequestObject) != `{"metadata":{"resourceVersion":"42"},"spec":{"maxReplicas":8}}` {
		t.Errorf("requests %+v, want one with the patch's body", reqs)
	}
}
