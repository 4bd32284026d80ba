// Identity, team and per-person group from the design's table: claim shapes, binding order, the default
// team, the leaf's name, and the admin scope with its cap.
import { describe, expect, test } from "bun:test";
import { adminScopeFor, claimGroups, forgeIdentity, forgeOrgGroup, leafGroup, oidcIdentity, teamFor, type TeamConfig } from "../../src/identity/team.ts";

const CONFIG: TeamConfig = {
  role_bindings: {
    corp: { "ml-eng": { group: "ml" }, admins: { admin_scope: "full" }, "platform": { group: "platform" }, auditors: { admin_scope: "read-only" }, "example.com": { group: "everyone" } },
    forge: { "forge:org/acme": { group: "acme" } },
  },
  default_team: "sandbox",
};

describe("identity and team", () => {
  test("identities of record", () => {
    expect(oidcIdentity("00u1")).toBe("user:00u1");
    expect(forgeIdentity("octocat")).toBe("forge:octocat");
    expect(forgeOrgGroup("acme")).toBe("forge:org/acme");
    expect(leafGroup("user:alice", "ml")).toBe("user:alice@ml");
  });

  test("the role claim: an array's strings, or one string; anything else none", () => {
    expect(claimGroups({ groups: ["a", 3, "", "b", null] })).toEqual(["a", "b"]);
    expect(claimGroups({ hd: "example.com" }, "hd")).toEqual(["example.com"]);
    expect(claimGroups({ roles: ["admin"] }, "roles")).toEqual(["admin"]);
    expect(claimGroups({ groups: { a: 1 } })).toEqual([]);
    expect(claimGroups({})).toEqual([]);
  });

  test("the first group binding in config order wins; admin bindings never pick a team", () => {
    expect(teamFor("corp", ["platform", "ml-eng"], CONFIG)).toBe("ml");
    expect(teamFor("corp", ["admins", "platform"], CONFIG)).toBe("platform");
    expect(teamFor("corp", ["example.com"], CONFIG)).toBe("everyone");
    expect(teamFor("forge", ["forge:org/acme"], CONFIG)).toBe("acme");
  });

  test("no binding: the default team; no default team: none", () => {
    expect(teamFor("corp", ["admins"], CONFIG)).toBe("sandbox");
    expect(teamFor("other", ["ml-eng"], CONFIG)).toBe("sandbox");
    expect(teamFor("corp", [], { role_bindings: CONFIG.role_bindings })).toBeUndefined();
  });

  test("admin scope: the highest binding, capped by max_admin_scope (read-only when omitted, none never)", () => {
    expect(adminScopeFor("corp", ["auditors", "admins"], CONFIG, "full")).toBe("full");
    expect(adminScopeFor("corp", ["auditors", "admins"], CONFIG)).toBe("read-only");
    expect(adminScopeFor("corp", ["auditors"], CONFIG, "full")).toBe("read-only");
    expect(adminScopeFor("corp", ["admins"], CONFIG, "none")).toBeUndefined();
    expect(adminScopeFor("corp", ["ml-eng"], CONFIG, "full")).toBeUndefined();
  });
});
