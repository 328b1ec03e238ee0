package shimspec

import (
	"encoding/json"
	"fmt"
	"time"
)

// OptionsConfigMap is the ConfigMap in the operator's namespace where a
// running operator publishes the options it plans with (Published), under
// OptionsKey, so that kubectl shimkit plan plans with the same.
const (
	OptionsConfigMap = "shimkit-operator-options"
	OptionsKey       = "options.json"
)

// Published are the options a running operator plans with, its
// defaults applied: the settings of every node plan, the API server's
// version it judges the nodes by, and the rules of its batches and
// verifications.
type Published struct {
	InstallerImage     string        `json:"installerImage"`
	Namespace          string        `json:"namespace"`
	Preset             string        `json:"preset,omitempty"`
	ConfigMode         string        `json:"configMode,omitempty"`
	RestartTimeout     time.Duration `json:"restartTimeout,omitempty"`
	ServerVersion      string        `json:"serverVersion,omitempty"`
	BatchWindow        time.Duration `json:"batchWindow"`
	VerifyPeriod       time.Duration `json:"verifyPeriod"`
	MaxRestartingNodes int           `json:"maxRestartingNodes,omitempty"`
}

// ParsePublished reads what an operator published (the ConfigMap's
// OptionsKey), refusing one without an installer image or namespace.
func ParsePublished(data string) (Published, error) {
	var p Published
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		return Published{}, fmt.Errorf("ConfigMap %s, key %s: %w", OptionsConfigMap, OptionsKey, err)
	}
	if p.InstallerImage == "" || p.Namespace == "" {
		return Published{}, fmt.Errorf("ConfigMap %s, key %s: installerImage and namespace are required", OptionsConfigMap, OptionsKey)
	}
	return p, nil
}
