"""Every estimator of ragmeter, in one place: numpy and scipy only, nothing of ragmeter but `errors`.

- `resample`: the one bootstrap (percentile; plain, paired and clustered; seeded by the caller) and the
  percentile interval it gives;
- `intervals`: Wilson's interval, the t quantile, the bootstrap interval of a mean;
- `paired`: paired t-test, Fisher's randomisation test, the paired bootstrap of a mean difference, Holm;
- `effects`: Cohen's d_z and its interval, clustered resampling, the cluster-robust t-test, sign flips;
- `power`: power of the paired t-test, queries needed, minimum detectable effect;
- `tukey`: the randomised Tukey HSD;
- `confseq`: the without-replacement confidence sequence and the gate decision;
- `krippendorff`: Krippendorff's alpha (nominal, ordinal, interval) and repeat stability;
- `ppi`: prediction-powered inference for a mean.

Nothing outside this package draws resamples (the seeded query order of a sequential run is an order, not
a resample). Each caller passes its seed and its resample count under one name, `n_resamples`.
"""
