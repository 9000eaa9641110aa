/* ADBench bundle adjustment (gradbench SPEC.md 3.7): the residuals of every
   observation and their Jacobian blocks, derived by hand (ADBench's
   "Manual" style: the chain rule through Rodrigues' rotation, the
   perspective division and the radial distortion, one observation at a
   time). Arrays use the layouts of bench/gradbench/modules/ba.dl's exports
   (parameter-major: cam[11][n], x[3][m], blocks [param][2][p]), so the
   outputs compare entry by entry; observations split over BENCH_THREADS. */
#include "bench/ref/ref.h"

typedef struct {
  int64_t n, m, p;
  const double *cam, *x, *w, *feat;
  const int64_t *cam_of, *pt_of;
  double *reproj, *w_err;                  /* objective */
  double *d_cam, *d_point, *d_w, *d_w_err; /* Jacobian */
} Problem;

/* The residual pair of one observation and, when `jac` is not NULL, its
   derivatives: jac[k][t] = d e_k / d (camera 0..10, point 11..13, w 14). */
static void Observation(const double cam[11], const double point[3], double w,
                        const double feat[2], double e[2], double jac[2][15]) {
  const double* r = cam;
  double y[3] = {point[0] - cam[3], point[1] - cam[4], point[2] - cam[5]};
  double theta2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
  double ry = r[0] * y[0] + r[1] * y[1] + r[2] * y[2];
  double rxy[3] = {r[1] * y[2] - r[2] * y[1], r[2] * y[0] - r[0] * y[2],
                   r[0] * y[1] - r[1] * y[0]};
  /* Z = alpha Y + beta (r x Y) + gamma r (r . Y): with a = r / theta this is
     Rodrigues' formula; theta = 0 takes the spec's first-order branch. */
  double z[3], dz_dr[3][3], dz_dy[3][3];
  if (theta2 != 0) {
    double theta = sqrt(theta2), c = cos(theta), s = sin(theta);
    double alpha = c, beta = s / theta, gamma = (1 - c) / theta2;
    /* d/dtheta of alpha, beta, gamma, times dtheta/dr_k = r_k / theta. */
    double dalpha = -s / theta;
    double dbeta = (theta * c - s) / (theta2 * theta);
    double dgamma = (theta * s - 2 * (1 - c)) / (theta2 * theta2);
    for (int i = 0; i < 3; ++i) {
      z[i] = alpha * y[i] + beta * rxy[i] + gamma * r[i] * ry;
      for (int k = 0; k < 3; ++k) {
        dz_dr[i][k] =
            r[k] * (dalpha * y[i] + dbeta * rxy[i] + dgamma * r[i] * ry) +
            gamma * (r[i] * y[k] + (i == k ? ry : 0));
        dz_dy[i][k] = (i == k ? alpha : 0) + gamma * r[i] * r[k];
      }
    }
    /* The cross products: d(r x Y)/dr = -[Y]x, d(r x Y)/dY = [r]x. */
    dz_dr[0][1] += beta * y[2], dz_dr[0][2] -= beta * y[1];
    dz_dr[1][0] -= beta * y[2], dz_dr[1][2] += beta * y[0];
    dz_dr[2][0] += beta * y[1], dz_dr[2][1] -= beta * y[0];
    dz_dy[0][1] -= beta * r[2], dz_dy[0][2] += beta * r[1];
    dz_dy[1][0] += beta * r[2], dz_dy[1][2] -= beta * r[0];
    dz_dy[2][0] -= beta * r[1], dz_dy[2][1] += beta * r[0];
  } else {
    for (int i = 0; i < 3; ++i) {
      z[i] = y[i] + rxy[i];
      for (int k = 0; k < 3; ++k) dz_dr[i][k] = dz_dy[i][k] = i == k;
    }
    dz_dr[0][0] = dz_dr[1][1] = dz_dr[2][2] = 0;
    dz_dr[0][1] = y[2], dz_dr[0][2] = -y[1];
    dz_dr[1][0] = -y[2], dz_dr[1][2] = y[0];
    dz_dr[2][0] = y[1], dz_dr[2][1] = -y[0];
    dz_dy[0][1] = -r[2], dz_dy[0][2] = r[1];
    dz_dy[1][0] = r[2], dz_dy[1][2] = -r[0];
    dz_dy[2][0] = -r[1], dz_dy[2][1] = r[0];
  }
  double inv_z2 = 1 / z[2];
  double pi[2] = {z[0] * inv_z2, z[1] * inv_z2};
  double rho = pi[0] * pi[0] + pi[1] * pi[1];
  double k1 = cam[9], k2 = cam[10], f = cam[6];
  double distortion = 1 + k1 * rho + k2 * rho * rho;
  double proj[2] = {f * pi[0] * distortion + cam[7],
                    f * pi[1] * distortion + cam[8]};
  e[0] = w * (proj[0] - feat[0]);
  e[1] = w * (proj[1] - feat[1]);
  if (!jac) return;
  double ddist_drho = k1 + 2 * k2 * rho;
  for (int u = 0; u < 2; ++u) {
    double* row = jac[u];
    /* d e_u / d pi_v = w f (delta_uv D + pi_u dD/drho 2 pi_v), then through
       pi = (Z0, Z1) / Z2 to d e_u / d Z. */
    double de_dpi[2];
    for (int v = 0; v < 2; ++v)
      de_dpi[v] =
          w * f * ((u == v ? distortion : 0) + pi[u] * ddist_drho * 2 * pi[v]);
    double de_dz[3] = {de_dpi[0] * inv_z2, de_dpi[1] * inv_z2,
                       -(de_dpi[0] * pi[0] + de_dpi[1] * pi[1]) * inv_z2};
    for (int k = 0; k < 3; ++k) {
      double via_r = 0, via_y = 0;
      for (int i = 0; i < 3; ++i) {
        via_r += de_dz[i] * dz_dr[i][k];
        via_y += de_dz[i] * dz_dy[i][k];
      }
      row[k] = via_r;
      row[3 + k] = -via_y; /* Y = X - C */
      row[11 + k] = via_y;
    }
    row[6] = w * pi[u] * distortion;
    row[7] = u == 0 ? w : 0;
    row[8] = u == 1 ? w : 0;
    row[9] = w * f * pi[u] * rho;
    row[10] = w * f * pi[u] * rho * rho;
    row[14] = proj[u] - feat[u];
  }
}

static void Load(const Problem* b, int64_t i, double cam[11], double point[3],
                 double feat[2]) {
  int64_t c = b->cam_of[i], q = b->pt_of[i];
  for (int t = 0; t < 11; ++t) cam[t] = b->cam[t * b->n + c];
  for (int t = 0; t < 3; ++t) point[t] = b->x[t * b->m + q];
  feat[0] = b->feat[i];
  feat[1] = b->feat[b->p + i];
}

static void ObjectiveChunk(void* ctx, int64_t begin, int64_t end) {
  const Problem* b = (const Problem*)ctx;
  for (int64_t i = begin; i < end; ++i) {
    double cam[11], point[3], feat[2], e[2];
    Load(b, i, cam, point, feat);
    Observation(cam, point, b->w[i], feat, e, NULL);
    b->reproj[i] = e[0];
    b->reproj[b->p + i] = e[1];
    b->w_err[i] = 1 - b->w[i] * b->w[i];
  }
}

static void JacobianChunk(void* ctx, int64_t begin, int64_t end) {
  const Problem* b = (const Problem*)ctx;
  const int64_t p = b->p;
  for (int64_t i = begin; i < end; ++i) {
    double cam[11], point[3], feat[2], e[2], jac[2][15];
    Load(b, i, cam, point, feat);
    Observation(cam, point, b->w[i], feat, e, jac);
    for (int u = 0; u < 2; ++u) {
      for (int t = 0; t < 11; ++t) b->d_cam[(t * 2 + u) * p + i] = jac[u][t];
      for (int t = 0; t < 3; ++t)
        b->d_point[(t * 2 + u) * p + i] = jac[u][11 + t];
      b->d_w[u * p + i] = jac[u][14];
    }
    b->d_w_err[i] = -2 * b->w[i];
  }
}

void RefBaObjective(int64_t n, int64_t m, int64_t p, const double* cam,
                    const double* x, const double* w, const double* feat,
                    const int64_t* cam_of, const int64_t* pt_of, double* reproj,
                    double* w_err) {
  Problem b = {n, m, p, cam, x, w, feat, cam_of, pt_of, reproj, w_err};
  BenchParallel(p, ObjectiveChunk, &b);
}

void RefBaJacobian(int64_t n, int64_t m, int64_t p, const double* cam,
                   const double* x, const double* w, const double* feat,
                   const int64_t* cam_of, const int64_t* pt_of, double* d_cam,
                   double* d_point, double* d_w, double* d_w_err) {
  Problem b = {n,     m,    p,    cam,   x,       w,   feat,   cam_of,
               pt_of, NULL, NULL, d_cam, d_point, d_w, d_w_err};
  BenchParallel(p, JacobianChunk, &b);
}

void RefBaObservation(const double cam[11], const double point[3], double w,
                      const double feat[2], double e[2], double jac[2][15]) {
  Observation(cam, point, w, feat, e, jac);
}
