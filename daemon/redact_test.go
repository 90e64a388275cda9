package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestToolLog_KeepsSiteURLs: a URL of the site, its port and a
// permalink's date included, is logged as it is: read as one run of
// digits, 127.0.0.1:8120/2025/03/15 was logged as a phone number. What a
// visitor wrote into a URL's query is still cut.
func TestToolLog_KeepsSiteURLs(t *testing.T) {
	d, site := indexedDaemon(t)
	u := site.URL() + "/2025/03/15/freshra25a06g/"
	args, _ := json.Marshal(map[string]string{"id_or_url": u + "?phone=0171%205550143"})
	if _, err := d.Call(context.Background(), "get_document", args); err == nil {
		t.Fatal("get_document of a page that does not exist: no error")
	}
	logs := indexedLogs.String()
	if want := `"url":"` + u + `?phone=[phone]"`; !strings.Contains(logs, want) {
		t.Errorf("tool logs lack %s", want)
	}
	if strings.Contains(logs, "5550143") {
		t.Error("the log holds the phone number")
	}
}
