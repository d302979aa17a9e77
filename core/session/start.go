package session

// What a session needs to start, and a start that failed: an init skill's
// input whose dtype does not allow None is a variable the session must be
// given (without it the start is refused and nothing runs), and an init
// skill that fails ends the start (the session is kept, closed, with its
// log) instead of leaving a session that looks fine.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"toolhost/storage"
)

// StartError is a session start that was refused or failed. Every door
// shows its Message as it is: the API as a problem of Status, the console,
// MCP's initialize and `toolhost session` (which exits non-zero).
type StartError struct {
	// Status is 422 for both: missing variables, or an init skill that
	// failed.
	Status int
	// Title names the problem: "Missing session variables" or "Init
	// skill failed".
	Title   string
	Message string
	// Missing are the variables the start lacked, in the order the init
	// skills list them.
	Missing []string
	// Session is the session an init skill failed in (stored, closed);
	// nil when the start was refused.
	Session *storage.Session
	// Skills are the init skills' outcomes, the failed ones included.
	Skills []SkillOutcome
}

// Error implements error.
func (e *StartError) Error() string { return e.Message }

// required is an init skill input that the start variables must give.
type required struct {
	name, dtype, skill, group string
}

// requiredInputs are the inputs of the init skills whose dtype does not
// allow None, each variable once (at its first skill), in order.
func (e *Engine) requiredInputs() []required {
	var out []required
	seen := map[string]bool{}
	for _, g := range e.Groups {
		for _, sk := range g.Skills {
			if !sk.SessionInit {
				continue
			}
			for _, in := range sk.Inputs {
				if in.DType == nil || in.DType.Nullable() || seen[in.Name] {
					continue
				}
				seen[in.Name] = true
				out = append(out, required{in.Name, in.DType.String(), sk.Name, g.Name})
			}
		}
	}
	return out
}

// checkVariables refuses a start whose variables lack a required input of
// an init skill (absent, or null): one error naming every one.
func (e *Engine) checkVariables(vars map[string]any) error {
	var missing, why []string
	for _, r := range e.requiredInputs() {
		if v, ok := vars[r.name]; ok && v != nil {
			continue
		}
		missing = append(missing, r.name)
		why = append(why, fmt.Sprintf("%s (%s, an input of init skill %q of group %q)", r.name, r.dtype, r.skill, r.group))
	}
	if len(missing) == 0 {
		return nil
	}
	word := "variable"
	if len(missing) > 1 {
		word = "variables"
	}
	return &StartError{Status: 422, Title: "Missing session variables", Missing: missing,
		Message: fmt.Sprintf("a session of agent %q needs the %s %s: give %s when the session starts (an input whose dtype allows None may be left out)",
			e.Agent.Name, word, strings.Join(why, ", "), strings.Join(missing, ", "))}
}

// initFailed ends a start whose init skills did not all succeed: the
// session is closed (its log has the skills' calls and the reason) and the
// failures are the error.
func (e *Engine) initFailed(ctx context.Context, s *storage.Session, outcomes []SkillOutcome) error {
	var failed []string
	for _, o := range outcomes {
		if !o.Success {
			msg := "failed"
			if o.Error != nil {
				msg = "failed: " + o.Error.Error()
			}
			failed = append(failed, fmt.Sprintf("init skill %q of group %q %s", o.Skill, o.Group, msg))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	reason := strings.Join(failed, "; ")
	s.Closed = true
	s.FinishedAt = time.Now().UTC().Format(time.RFC3339Nano)
	if err := e.Store.SaveSession(ctx, s); err != nil {
		return err
	}
	e.log(ctx, s, "system", "session_finish", map[string]any{"variables": s.Variables, "skills": []SkillOutcome{},
		"abandoned": reason})
	return &StartError{Status: 422, Title: "Init skill failed", Session: s, Skills: outcomes,
		Message: fmt.Sprintf("the session %s could not start, and is closed: %s", s.ID, reason)}
}
