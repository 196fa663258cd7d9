/** How the dashboard was configured at start. */
export interface DashboardSettings {
  signupEnabled: boolean;
}

export const DASHBOARD_SETTINGS = Symbol('DashboardSettings');
