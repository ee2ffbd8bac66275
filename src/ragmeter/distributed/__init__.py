"""Scale-out on Ray (the optional extra `ragmeter[ray]`): the run executor, IR evaluation partitioned by
query, and dense index building on Ray Data. Nothing here is imported unless asked for; `ray` itself is
imported only inside these modules' functions."""
