// Who is signed in and what their scope lets the console show (GET /session).
import { effect, signal } from "@preact/signals";
import { admin, failure, token } from "./api.ts";

export interface Session {
  readonly principal: string;
  readonly scope: "full" | "read-only";
}

export const session = signal<Session | null>(null);
export const sessionError = signal<string | null>(null);

/** Whether the signed-in principal may change things: a read-only one sees no such control. */
export const canChange = () => session.value?.scope === "full";

effect(() => {
  if (token.value === null) {
    session.value = null;
    return;
  }
  admin.getSession().then(
    (s) => {
      session.value = s;
      sessionError.value = null;
    },
    (error) => {
      sessionError.value = failure(error);
    },
  );
});
